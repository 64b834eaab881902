// A small crash-safe key/value store in one directory: a checksummed snapshot published by
// rename, plus a checksummed append-only journal. Every put/erase is appended and fdatasync'ed
// before it returns, so an acknowledged change survives kill -9 and power loss; compaction
// rewrites the snapshot (write temp, fsync, rename, fsync the directory) and then resets the
// journal the same way. Damage is reported as an error naming the file, offset and reason;
// the store never resets itself. Used for VNI allocations, networks and endpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics/histogram.hpp"
#include "vni/record_codec.hpp"
#include "common/result.hpp"

namespace vxfed::vni {

class DurableStore {
 public:
  // Points where a crash can interrupt a write; tests install a hook that kills the process
  // at each one and check what the next open() sees.
  enum class Step {
    journal_partial_write,   // half a record appended
    journal_written,         // whole record appended, not yet fdatasync'ed
    journal_synced,          // durable; about to return
    snapshot_temp_written,   // temp snapshot written, not yet fsync'ed
    snapshot_temp_synced,    // temp snapshot durable, not yet renamed ("between write and rename")
    snapshot_renamed,        // renamed, directory not yet fsync'ed
    snapshot_dir_synced,     // snapshot published; journal still holds the old records
    journal_reset,           // journal replaced by an empty one
  };
  using CrashHook = std::function<void(Step)>;

  struct Options {
    std::size_t compact_after_records = 4096;  // or the number of live entries, if larger
    // A change is refused unless the state directory's filesystem keeps this much free after
    // it, plus room for a compacted snapshot: a write must not depend on the slack in the
    // journal's last block (it would succeed or not by chance), and compaction must always be
    // able to rewrite the snapshot. 0: no check (tests of the file format).
    std::uint64_t min_free_bytes = 64 * 1024;
    CrashHook crash_hook;                       // tests only
  };

  // Opens (creating if absent) `dir`/`name`.snap and `dir`/`name`.journal. `notes` receives
  // what recovery did (a torn journal tail discarded, a stale temp file removed) for logging.
  // Holds an exclusive flock: two daemons on one state directory are refused.
  static Result<std::unique_ptr<DurableStore>> open(const std::string& dir, const std::string& name,
                                                    Options options, std::vector<std::string>* notes);
  ~DurableStore();
  DurableStore(const DurableStore&) = delete;
  DurableStore& operator=(const DurableStore&) = delete;

  const Entries& entries() const { return entries_; }
  std::uint64_t seq() const { return seq_; }
  Status put(const std::string& key, const std::string& value);   // the stored value again: no write
  Status erase(const std::string& key);   // erasing an absent key is a no-op
  Status compact();

  std::string snapshot_path() const { return dir_ + "/" + name_ + ".snap"; }
  std::string journal_path() const { return dir_ + "/" + name_ + ".journal"; }
  std::size_t journal_records() const { return journal_records_; }
  // Seconds each journal append took, write and fdatasync (what an API answer waits for).
  const metrics::Histogram& write_latency() const { return write_latency_; }

 private:
  DurableStore(std::string dir, std::string name, Options options)
      : dir_(std::move(dir)), name_(std::move(name)), options_(std::move(options)) {}
  Status load(std::vector<std::string>* notes);
  Status append(const JournalRecord& record);
  Status reset_journal();
  Status check_free_space(std::size_t record_bytes) const;
  void maybe_compact();
  void crash_point(Step step) const {
    if (options_.crash_hook) options_.crash_hook(step);
  }

  std::string dir_;
  std::string name_;
  Options options_;
  Entries entries_;
  std::uint64_t seq_ = 0;
  int journal_fd_ = -1;
  int lock_fd_ = -1;
  std::size_t journal_records_ = 0;
  std::uint64_t journal_size_ = 0;
  metrics::Histogram write_latency_;
};

// File helpers shared by the stores (all return errors naming the path).
Status write_file_atomic(const std::string& dir, const std::string& name, const std::string& bytes,
                         const std::function<void(int)>& after_step = {});
Status fsync_dir(const std::string& dir);

}  // namespace vxfed::vni
