// The plugin's files under stateDir (default /var/lib/cni/vxfed):
//   lock                    flock(2) taken around every read-modify-write below
//   attachments/<host>.json one AttachmentRecord per live attachment (records.hpp)
//   pending-detach.json     detaches vxfedd has not acknowledged yet (it was down)
// Files are written to a temporary name and renamed, so a crash never leaves half a file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/errors.hpp"
#include "cni/records.hpp"

namespace vxfed::cni {

class StateStore {
 public:
  static Expected<StateStore> open(const std::string& dir);

  StateStore(StateStore&& o) noexcept : dir_(std::move(o.dir_)), lock_fd_(o.lock_fd_) { o.lock_fd_ = -1; }
  StateStore(const StateStore&) = delete;
  ~StateStore();

  // Exclusive lock for the lifetime of the returned guard.
  class Guard {
   public:
    explicit Guard(int fd) : fd_(fd) {}
    Guard(Guard&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    ~Guard();
   private:
    int fd_;
  };
  Expected<Guard> lock();

  Done save_record(const AttachmentRecord& r);
  std::optional<AttachmentRecord> load_record(const std::string& host_iface);
  Done remove_record(const std::string& host_iface);
  std::vector<AttachmentRecord> list_records();

  Expected<std::vector<PendingDetach>> load_queue();
  Done save_queue(const std::vector<PendingDetach>& q);

  const std::string& dir() const { return dir_; }

 private:
  StateStore(std::string dir, int lock_fd) : dir_(std::move(dir)), lock_fd_(lock_fd) {}
  Done write_atomically(const std::string& path, const std::string& text);
  std::string dir_;
  int lock_fd_ = -1;
};

}  // namespace vxfed::cni
