// StateStore: the plugin's files under stateDir (cni/state_store.hpp): records, the queue of
// pending detaches, the lock, and what happens with missing, corrupt or unwritable files.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "cni/state_store.hpp"
#include "common/read_file.hpp"
#include "tests/cni/temp_dir.hpp"

namespace vxfed::cni {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

AttachmentRecord record(const std::string& container_id, const std::string& ifname = "net1") {
  AttachmentRecord r;
  r.container_id = container_id;
  r.ifname = ifname;
  r.config_name = "fed-a-conf";
  r.network = "fed-a";
  r.netns = "/var/run/netns/" + container_id;
  r.host_iface = host_iface_name(container_id, ifname);
  r.address = "10.244.1.5/16";
  r.mac = "0a:58:0a:f4:01:05";
  r.ipam_type = "host-local";
  r.created_unix_ms = 1764763200000;
  return r;
}

void expect_same(const AttachmentRecord& a, const AttachmentRecord& b) {
  EXPECT_EQ(a.container_id, b.container_id);
  EXPECT_EQ(a.ifname, b.ifname);
  EXPECT_EQ(a.config_name, b.config_name);
  EXPECT_EQ(a.network, b.network);
  EXPECT_EQ(a.netns, b.netns);
  EXPECT_EQ(a.host_iface, b.host_iface);
  EXPECT_EQ(a.address, b.address);
  EXPECT_EQ(a.mac, b.mac);
  EXPECT_EQ(a.ipam_type, b.ipam_type);
  EXPECT_EQ(a.created_unix_ms, b.created_unix_ms);
}

// Files in dir whose name contains ".tmp": left-overs of an interrupted atomic write.
int temporaries(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) ++n;
  return n;
}

TEST(StateStore, OpenCreatesTheDirectoriesAndTheLockFile) {
  TempDir tmp;
  const std::string dir = tmp / "a/b/vxfed";
  auto store = StateStore::open(dir);
  ASSERT_TRUE(store.ok()) << store.error().msg;
  EXPECT_TRUE(fs::is_directory(dir + "/attachments"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/lock"));
  struct stat st{};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(store->dir(), dir);
  EXPECT_TRUE(StateStore::open(dir).ok());  // again: nothing to create
}

TEST(StateStore, OpenFailsWithTheIoCodeWhereNoDirectoryCanBe) {
  TempDir tmp;
  std::ofstream(tmp / "file") << "x";
  auto store = StateStore::open(tmp / "file/state");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, kIoFailure);
  EXPECT_NE(store.error().msg.find(tmp / "file"), std::string::npos) << store.error().msg;
  EXPECT_FALSE(store.error().details.empty());  // the errno text
}

TEST(StateStore, RecordsRoundTripAreListedAndRemoved) {
  TempDir tmp;
  auto store = StateStore::open(tmp.path);
  ASSERT_TRUE(store.ok());
  const auto a = record("aaaa"), b = record("bbbb", "eth0");
  ASSERT_TRUE(store->save_record(a).ok());
  ASSERT_TRUE(store->save_record(b).ok());
  EXPECT_TRUE(fs::is_regular_file(tmp.path + "/attachments/" + a.host_iface + ".json"));
  struct stat st{};
  ASSERT_EQ(::stat((tmp.path + "/attachments/" + a.host_iface + ".json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(temporaries(tmp.path), 0);

  auto loaded = store->load_record(a.host_iface);
  ASSERT_TRUE(loaded.has_value());
  expect_same(*loaded, a);

  auto all = store->list_records();
  ASSERT_EQ(all.size(), 2u);
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.container_id < y.container_id; });
  expect_same(all[0], a);
  expect_same(all[1], b);

  ASSERT_TRUE(store->remove_record(a.host_iface).ok());
  EXPECT_FALSE(store->load_record(a.host_iface).has_value());
  EXPECT_EQ(store->list_records().size(), 1u);
  EXPECT_TRUE(store->remove_record(a.host_iface).ok());  // already gone: fine (DEL twice)
}

TEST(StateStore, SavingAgainReplacesTheRecord) {
  TempDir tmp;
  auto store = StateStore::open(tmp.path);
  ASSERT_TRUE(store.ok());
  auto r = record("aaaa");
  ASSERT_TRUE(store->save_record(r).ok());
  r.address = "10.244.1.6/16";
  ASSERT_TRUE(store->save_record(r).ok());
  EXPECT_EQ(store->load_record(r.host_iface)->address, "10.244.1.6/16");
  EXPECT_EQ(store->list_records().size(), 1u);
}

TEST(StateStore, UnreadableRecordsAndStrayFilesAreSkipped) {
  TempDir tmp;
  auto store = StateStore::open(tmp.path);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->save_record(record("aaaa")).ok());
  std::ofstream(tmp.path + "/attachments/vxf000000000000.json") << "{not json";
  std::ofstream(tmp.path + "/attachments/notes.txt") << "hello";
  std::ofstream(tmp.path + "/attachments/x.json.tmp.123") << "{}";
  EXPECT_FALSE(store->load_record("vxf000000000000").has_value());
  EXPECT_FALSE(store->load_record("vxfmissing").has_value());
  const auto all = store->list_records();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].container_id, "aaaa");
}

TEST(StateStore, QueueRoundTripsAndAnEmptyQueueRemovesTheFile) {
  TempDir tmp;
  auto store = StateStore::open(tmp.path);
  ASSERT_TRUE(store.ok());
  auto q = store->load_queue();
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->empty());  // no file yet

  const std::vector<PendingDetach> want{{"aaaa", "net1", "fed-a", 1000, 0}, {"bbbb", "eth0", "fed-b", 2000, 3}};
  ASSERT_TRUE(store->save_queue(want).ok());
  EXPECT_TRUE(fs::exists(tmp.path + "/pending-detach.json"));
  q = store->load_queue();
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*q)[i].container_id, want[i].container_id);
    EXPECT_EQ((*q)[i].ifname, want[i].ifname);
    EXPECT_EQ((*q)[i].network, want[i].network);
    EXPECT_EQ((*q)[i].queued_unix_ms, want[i].queued_unix_ms);
    EXPECT_EQ((*q)[i].attempts, want[i].attempts);
  }
  ASSERT_TRUE(store->save_queue({}).ok());
  EXPECT_FALSE(fs::exists(tmp.path + "/pending-detach.json"));
  EXPECT_TRUE(store->save_queue({}).ok());  // nothing to remove: fine
  EXPECT_EQ(temporaries(tmp.path), 0);
}

TEST(StateStore, ACorruptQueueIsKeptAsideAndAFreshOneStarts) {
  TempDir tmp;
  auto store = StateStore::open(tmp.path);
  ASSERT_TRUE(store.ok());
  std::ofstream(tmp.path + "/pending-detach.json") << "[{\"containerID\": ";
  auto q = store->load_queue();
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->empty());
  EXPECT_FALSE(fs::exists(tmp.path + "/pending-detach.json"));
  auto kept = vxfed::read_file(tmp.path + "/pending-detach.json.corrupt");
  ASSERT_TRUE(kept) << kept.error().message();
  EXPECT_EQ(*kept, "[{\"containerID\": ");  // for a person to look at
}

// Whether another open file description could take the lock right now.
bool lockable_elsewhere(const std::string& dir) {
  const int fd = ::open((dir + "/lock").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return ok;
}

TEST(StateStore, LockIsExclusiveUntilTheGuardGoes) {
  TempDir tmp;
  auto store = StateStore::open(tmp.path);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(lockable_elsewhere(tmp.path));
  {
    auto guard = store->lock();
    ASSERT_TRUE(guard.ok()) << guard.error().msg;
    EXPECT_FALSE(lockable_elsewhere(tmp.path));  // another plugin invocation would wait
    auto moved = std::move(*guard);              // the lock travels with the guard
    EXPECT_FALSE(lockable_elsewhere(tmp.path));
  }
  EXPECT_TRUE(lockable_elsewhere(tmp.path));
}

TEST(StateStore, WritesFailWithTheIoCodeWhenTheDirectoryIsGone) {
  TempDir tmp;
  auto store = StateStore::open(tmp / "state");
  ASSERT_TRUE(store.ok());
  fs::remove_all(tmp / "state");
  auto st = store->save_record(record("aaaa"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, kIoFailure);
  EXPECT_NE(st.error().msg.find("cannot write"), std::string::npos) << st.error().msg;
  auto q = store->save_queue({{"aaaa", "net1", "fed-a", 1, 0}});
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().code, kIoFailure);
  EXPECT_TRUE(store->list_records().empty());
}

}  // namespace
}  // namespace vxfed::cni
