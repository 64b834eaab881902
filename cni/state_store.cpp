#include "cni/state_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/read_file.hpp"

namespace vxfed::cni {

namespace {

Done mkdir_p(const std::string& path) {
  std::string partial;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    partial += "/" + part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return cni_error(kIoFailure, "cannot create the state directory " + partial, std::strerror(errno));
  }
  return done();
}

}  // namespace

Expected<StateStore> StateStore::open(const std::string& dir) {
  if (auto r = mkdir_p(dir + "/attachments"); !r) return r.error();
  const std::string lock_path = dir + "/lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return cni_error(kIoFailure, "cannot open the lock file " + lock_path, std::strerror(errno));
  return StateStore(dir, fd);
}

StateStore::~StateStore() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

StateStore::Guard::~Guard() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

Expected<StateStore::Guard> StateStore::lock() {
  while (::flock(lock_fd_, LOCK_EX) != 0) {
    if (errno != EINTR) return cni_error(kIoFailure, "cannot lock " + dir_ + "/lock", std::strerror(errno));
  }
  return Guard(lock_fd_);
}

Done StateStore::write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return cni_error(kIoFailure, "cannot write " + tmp, std::strerror(errno));
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return cni_error(kIoFailure, "cannot write " + tmp, std::strerror(e));
    }
    off += static_cast<std::size_t>(w);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return cni_error(kIoFailure, "cannot rename " + tmp + " to " + path, std::strerror(e));
  }
  return done();
}

Done StateStore::save_record(const AttachmentRecord& r) {
  return write_atomically(dir_ + "/attachments/" + r.host_iface + ".json", write_record(r));
}

std::optional<AttachmentRecord> StateStore::load_record(const std::string& host_iface) {
  auto text = read_file(dir_ + "/attachments/" + host_iface + ".json");
  if (!text) return std::nullopt;
  auto r = parse_record(*text);
  if (!r) return std::nullopt;
  return *r;
}

Done StateStore::remove_record(const std::string& host_iface) {
  const std::string path = dir_ + "/attachments/" + host_iface + ".json";
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return cni_error(kIoFailure, "cannot remove " + path, std::strerror(errno));
  return done();
}

std::vector<AttachmentRecord> StateStore::list_records() {
  std::vector<AttachmentRecord> out;
  DIR* d = ::opendir((dir_ + "/attachments").c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 6 || name.substr(name.size() - 5) != ".json") continue;
    if (auto r = load_record(name.substr(0, name.size() - 5))) out.push_back(*r);
  }
  ::closedir(d);
  return out;
}

Expected<std::vector<PendingDetach>> StateStore::load_queue() {
  const std::string path = dir_ + "/pending-detach.json";
  auto text = read_file(path);
  if (!text) return std::vector<PendingDetach>{};
  auto q = parse_queue(*text);
  if (!q) {
    // Keep the unreadable file for a person to look at; start a fresh queue.
    ::rename(path.c_str(), (path + ".corrupt").c_str());
    return std::vector<PendingDetach>{};
  }
  return q;
}

Done StateStore::save_queue(const std::vector<PendingDetach>& q) {
  const std::string path = dir_ + "/pending-detach.json";
  if (q.empty()) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return cni_error(kIoFailure, "cannot remove " + path, std::strerror(errno));
    return done();
  }
  return write_atomically(path, write_queue(q));
}

}  // namespace vxfed::cni
