#include "vni/durable_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/read_file.hpp"

namespace vxfed::vni {

namespace {

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

Status write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(errno_text("cannot write", path));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

Status mkdir_p(const std::string& dir) {
  std::string partial;
  for (std::size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
        return make_error(errno_text("cannot create directory", partial));
    }
  }
  return {};
}

bool exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

Status fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return make_error(errno_text("cannot open directory", dir));
  const int rc = ::fsync(fd);
  const auto err = errno_text("cannot fsync directory", dir);
  ::close(fd);
  if (rc != 0) return make_error(err);
  return {};
}

Status write_file_atomic(const std::string& dir, const std::string& name, const std::string& bytes,
                         const std::function<void(int)>& after_step) {
  const std::string path = dir + "/" + name;
  const std::string temp = path + ".tmp";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(errno_text("cannot create", temp));
  if (auto ok = write_all(fd, bytes, temp); !ok) {
    ::close(fd);
    ::unlink(temp.c_str());
    return ok;
  }
  if (after_step) after_step(0);
  if (::fsync(fd) != 0) {
    const auto err = errno_text("cannot fsync", temp);
    ::close(fd);
    ::unlink(temp.c_str());
    return make_error(err);
  }
  ::close(fd);
  if (after_step) after_step(1);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const auto err = errno_text("cannot rename " + temp + " to", path);
    ::unlink(temp.c_str());
    return make_error(err);
  }
  if (after_step) after_step(2);
  if (auto ok = fsync_dir(dir); !ok) return ok;
  if (after_step) after_step(3);
  return {};
}

Result<std::unique_ptr<DurableStore>> DurableStore::open(const std::string& dir,
                                                         const std::string& name, Options options,
                                                         std::vector<std::string>* notes) {
  if (auto ok = mkdir_p(dir); !ok) return make_error(ok.error());
  std::unique_ptr<DurableStore> store(new DurableStore(dir, name, std::move(options)));
  const std::string lock_path = dir + "/" + name + ".lock";
  store->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (store->lock_fd_ < 0) return make_error(errno_text("cannot open", lock_path));
  if (::flock(store->lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return make_error("state store " + dir + "/" + name +
                      " is locked by another process (is another vxfedd running on this state "
                      "directory?)");
  if (auto ok = store->load(notes); !ok) return make_error(ok.error());
  return store;
}

DurableStore::~DurableStore() {
  if (journal_fd_ >= 0) ::close(journal_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status DurableStore::load(std::vector<std::string>* notes) {
  auto note = [&](std::string text) {
    if (notes) notes->push_back(std::move(text));
  };
  const std::string snap = snapshot_path();
  const std::string journal = journal_path();
  for (const auto& temp : {snap + ".tmp", journal + ".tmp"}) {
    if (exists(temp)) {
      // A write that crashed before its rename: never published, never acknowledged.
      ::unlink(temp.c_str());
      note("removed " + temp + " left by an interrupted write");
    }
  }
  std::uint64_t snap_seq = 0;
  bool have_snap = false;
  if (exists(snap)) {
    auto bytes = read_file(snap);
    if (!bytes) return make_error(bytes.error().message());
    auto decoded = decode_snapshot(*bytes);
    if (!decoded)
      return make_error("state file " + snap + " is corrupt: " + decoded.error() +
                        "; refusing to start with it (restore it from a backup, or move it "
                        "aside to start with no " + name_ + ")");
    entries_ = std::move(decoded->entries);
    snap_seq = decoded->seq;
    have_snap = true;
  }
  seq_ = snap_seq;
  if (!exists(journal)) {
    if (have_snap) note("journal " + journal + " was missing; the snapshot is complete");
    return reset_journal();
  }
  auto bytes = read_file(journal);
  if (!bytes) return make_error(bytes.error().message());
  auto decoded = decode_journal(*bytes);
  if (!decoded)
    return make_error("state file " + journal + " is corrupt: " + decoded.error() +
                      "; refusing to start with it (restore it from a backup, or move it aside)");
  if (decoded->header_torn) {
    note("journal " + journal + " had an incomplete header (interrupted creation); recreated");
    return reset_journal();
  }
  if (decoded->base_seq > snap_seq)
    return make_error("state file " + journal + " continues snapshot " +
                      std::to_string(decoded->base_seq) + " but " +
                      (have_snap ? snap + " is at " + std::to_string(snap_seq) : snap + " is missing") +
                      "; refusing to start with a store that lost changes");
  for (auto& record : decoded->records) {
    if (record.seq <= snap_seq) continue;  // already in the snapshot (crash before reset)
    if (record.op == Op::put)
      entries_[record.key] = std::move(record.value);
    else
      entries_.erase(record.key);
    seq_ = record.seq;
  }
  journal_records_ = decoded->records.size();
  journal_fd_ = ::open(journal.c_str(), O_WRONLY | O_CLOEXEC);
  if (journal_fd_ < 0) return make_error(errno_text("cannot open", journal));
  if (decoded->torn_bytes > 0) {
    // An append interrupted by a crash: it was never acknowledged, so dropping it loses nothing.
    if (::ftruncate(journal_fd_, static_cast<off_t>(decoded->valid_bytes)) != 0 ||
        ::fsync(journal_fd_) != 0)
      return make_error(errno_text("cannot truncate torn tail of", journal));
    note("discarded " + std::to_string(decoded->torn_bytes) + " bytes of an interrupted write at the end of " +
         journal + " (offset " + std::to_string(decoded->valid_bytes) + ")");
  }
  journal_size_ = decoded->valid_bytes;
  if (::lseek(journal_fd_, static_cast<off_t>(journal_size_), SEEK_SET) < 0)
    return make_error(errno_text("cannot seek", journal));
  return {};
}

Status DurableStore::reset_journal() {
  if (journal_fd_ >= 0) {
    ::close(journal_fd_);
    journal_fd_ = -1;
  }
  const std::string name = name_ + ".journal";
  if (auto ok = write_file_atomic(dir_, name, encode_journal_header(seq_)); !ok) return ok;
  crash_point(Step::journal_reset);
  journal_fd_ = ::open(journal_path().c_str(), O_WRONLY | O_CLOEXEC);
  if (journal_fd_ < 0) return make_error(errno_text("cannot open", journal_path()));
  journal_size_ = kJournalHeaderBytes;
  journal_records_ = 0;
  if (::lseek(journal_fd_, static_cast<off_t>(journal_size_), SEEK_SET) < 0)
    return make_error(errno_text("cannot seek", journal_path()));
  return {};
}

Status DurableStore::check_free_space(std::size_t record_bytes) const {
  if (options_.min_free_bytes == 0) return {};
  struct statvfs st{};
  if (::fstatvfs(journal_fd_, &st) != 0) return make_error(errno_text("cannot statvfs", journal_path()));
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  // Compaction writes a new snapshot beside the old one: about the journal plus the snapshot.
  struct stat snap{};
  const std::uint64_t snapshot_bytes = ::stat(snapshot_path().c_str(), &snap) == 0 ? static_cast<std::uint64_t>(snap.st_size) : 0;
  const std::uint64_t needed = record_bytes + options_.min_free_bytes + snapshot_bytes + journal_size_;
  if (free_bytes >= needed) return {};
  return make_error("state directory " + dir_ + " is full: " + std::to_string(free_bytes) + " bytes free, " +
                    std::to_string(needed) + " needed to record this change and keep room to compact " +
                    name_ + " (free space in " + dir_ + ", then retry)");
}

Status DurableStore::append(const JournalRecord& record) {
  const std::string bytes = encode_record(record);
  const std::string path = journal_path();
  if (auto ok = check_free_space(bytes.size()); !ok) return ok;
  const auto started = std::chrono::steady_clock::now();
  Status written;
  if (options_.crash_hook) {
    const auto half = bytes.size() / 2;
    written = write_all(journal_fd_, std::string_view(bytes).substr(0, half), path);
    if (written) crash_point(Step::journal_partial_write);
    if (written) written = write_all(journal_fd_, std::string_view(bytes).substr(half), path);
  } else {
    written = write_all(journal_fd_, bytes, path);
  }
  if (written) {
    crash_point(Step::journal_written);
    if (::fdatasync(journal_fd_) != 0) written = make_error(errno_text("cannot fdatasync", path));
  }
  if (!written) {
    // Leave no half record behind for the next append to follow.
    if (::ftruncate(journal_fd_, static_cast<off_t>(journal_size_)) == 0)
      (void)::lseek(journal_fd_, static_cast<off_t>(journal_size_), SEEK_SET);
    return written;
  }
  write_latency_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  crash_point(Step::journal_synced);
  journal_size_ += bytes.size();
  ++journal_records_;
  return {};
}

Status DurableStore::put(const std::string& key, const std::string& value) {
  // Storing what is stored already writes nothing: vxfedd records its config's networks at
  // every start, and must be able to start (and serve) on a full disk.
  if (auto it = entries_.find(key); it != entries_.end() && it->second == value) return {};
  JournalRecord record{seq_ + 1, Op::put, key, value};
  if (auto ok = append(record); !ok) return ok;
  seq_ = record.seq;
  entries_[key] = value;
  maybe_compact();
  return {};
}

Status DurableStore::erase(const std::string& key) {
  if (entries_.find(key) == entries_.end()) return {};
  JournalRecord record{seq_ + 1, Op::erase, key, {}};
  if (auto ok = append(record); !ok) return ok;
  seq_ = record.seq;
  entries_.erase(key);
  maybe_compact();
  return {};
}

void DurableStore::maybe_compact() {
  // Compacting once the journal holds as many records as the snapshot would hold entries keeps
  // the cost per change constant; the change is durable already, so a failed compaction only
  // leaves a longer journal (and is retried at the next change).
  if (journal_records_ >= std::max(options_.compact_after_records, entries_.size() / 2)) (void)compact();
}

Status DurableStore::compact() {
  static constexpr Step kSteps[] = {Step::snapshot_temp_written, Step::snapshot_temp_synced,
                                    Step::snapshot_renamed, Step::snapshot_dir_synced};
  auto ok = write_file_atomic(dir_, name_ + ".snap", encode_snapshot(seq_, entries_),
                              [this](int step) { crash_point(kSteps[step]); });
  if (!ok) return ok;
  return reset_journal();
}

}  // namespace vxfed::vni
