// Unit tests of the crash-safe store: the file codecs against a table of damaged files, and the
// VNI store killed (SIGKILL, in a child process) at every step of a write. Nothing acknowledged
// may be lost, no VNI may be given twice, and corruption must be reported, never reset.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/read_file.hpp"
#include "vni/allocation_store.hpp"
#include "vni/durable_store.hpp"
#include "vni/record_codec.hpp"

namespace {

using namespace vxfed::vni;
namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/vxfed-vni-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

std::string slurp(const std::string& path) {
  auto bytes = vxfed::read_file(path);
  return bytes ? *bytes : std::string();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// ---------- codecs ----------

TEST(SnapshotCodec, RoundTrips) {
  Entries entries{{"a", "1"}, {"b", std::string("\0\n\xff", 3)}};
  auto decoded = decode_snapshot(encode_snapshot(42, entries));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded->seq, 42u);
  EXPECT_EQ(decoded->entries, entries);
}

TEST(SnapshotCodec, EveryDamageIsAnError) {
  const std::string good = encode_snapshot(7, {{"vni/1000", "allocated\np\nred\n0"}});
  struct Case { const char* what; std::string bytes; const char* expect; };
  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x20;
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  const Case cases[] = {
      {"empty", "", "truncated"},
      {"header cut", good.substr(0, 10), "truncated"},
      {"body cut", good.substr(0, good.size() - 1), "truncated"},
      {"bit flip", flipped, "checksum"},
      {"bad magic", bad_magic, "magic"},
      {"trailing bytes", good + "x", "unexpected"},
  };
  for (const auto& c : cases) {
    auto r = decode_snapshot(c.bytes);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_NE(r.error().find(c.expect), std::string::npos) << c.what << ": " << r.error();
  }
}

TEST(JournalCodec, TornTailsAreRecoveredCorruptionIsNot) {
  const std::string header = encode_journal_header(0);
  const std::string r1 = encode_record({1, Op::put, "k1", "v1"});
  const std::string r2 = encode_record({2, Op::erase, "k1", ""});
  const std::string good = header + r1 + r2;
  {
    auto d = decode_journal(good);
    ASSERT_TRUE(d.ok()) << d.error();
    ASSERT_EQ(d->records.size(), 2u);
    EXPECT_EQ(d->records[1].op, Op::erase);
    EXPECT_EQ(d->torn_bytes, 0u);
  }
  struct Torn { const char* what; std::string bytes; std::size_t records; };
  std::string zero_body = header + r1 + r2.substr(0, kRecordHeaderBytes) +
                          std::string(r2.size() - kRecordHeaderBytes, '\0');
  const Torn torn[] = {
      {"partial record header", header + r1 + r2.substr(0, 5), 1},
      {"partial record body", header + r1 + r2.substr(0, r2.size() - 1), 1},
      {"zeroed tail", header + r1 + std::string(40, '\0'), 1},
      {"zeroed body of last record", zero_body, 1},
      {"partial file header", header.substr(0, 5), 0},
  };
  for (const auto& c : torn) {
    auto d = decode_journal(c.bytes);
    ASSERT_TRUE(d.ok()) << c.what << ": " << d.error();
    EXPECT_EQ(d->records.size(), c.records) << c.what;
    EXPECT_GT(d->torn_bytes, 0u) << c.what;
  }
  std::string mid = good;
  mid[header.size() + kRecordHeaderBytes + 2] ^= 1;  // inside r1's body, r2 follows
  std::string last = good;
  last[last.size() - 1] ^= 1;                         // non-zero damage of the last record
  std::string backwards = header + encode_record({5, Op::put, "a", "b"}) + encode_record({3, Op::put, "a", "c"});
  std::string garbage = good + "garbage-bytes-here";
  struct Bad { const char* what; std::string bytes; const char* expect; };
  const Bad bad[] = {
      {"checksum in the middle", mid, "checksum"},
      {"checksum of last record", last, "checksum"},
      {"sequence backwards", backwards, "sequence"},
      {"garbage after records", garbage, "magic"},
      {"not a journal", "hello world, this is text", "magic"},
  };
  for (const auto& c : bad) {
    auto d = decode_journal(c.bytes);
    ASSERT_FALSE(d.ok()) << c.what;
    EXPECT_NE(d.error().find(c.expect), std::string::npos) << c.what << ": " << d.error();
  }
}

// ---------- the store on disk ----------

TEST(DurableStore, PersistsAcrossReopenAndCompaction) {
  TempDir dir;
  {
    auto s = DurableStore::open(dir.path, "t", {.compact_after_records = 4}, nullptr);
    ASSERT_TRUE(s.ok()) << s.error();
    for (int i = 0; i < 50; ++i) ASSERT_TRUE((*s)->put("k" + std::to_string(i), std::to_string(i)).ok());
    for (int i = 0; i < 50; i += 2) ASSERT_TRUE((*s)->erase("k" + std::to_string(i)).ok());
    EXPECT_TRUE(fs::exists(dir.path + "/t.snap")) << "compaction ran";
  }
  auto s = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ((*s)->entries().size(), 25u);
  EXPECT_EQ((*s)->entries().at("k49"), "49");
  EXPECT_EQ((*s)->entries().count("k48"), 0u);
}

TEST(DurableStore, SecondOpenIsRefusedWhileLocked) {
  TempDir dir;
  auto a = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_TRUE(a.ok());
  auto b = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("locked"), std::string::npos);
}

TEST(DurableStore, ChangeRefusedWhenTheFilesystemCannotKeepItsReserve) {
  TempDir dir;
  {
    auto s = DurableStore::open(dir.path, "t", {}, nullptr);
    ASSERT_TRUE(s.ok()) << s.error();
    ASSERT_TRUE((*s)->put("kept", "1").ok());
  }
  {
    // No filesystem has 2^62 bytes free: every change is refused as on a full disk.
    auto s = DurableStore::open(dir.path, "t", {.min_free_bytes = std::uint64_t{1} << 62}, nullptr);
    ASSERT_TRUE(s.ok()) << s.error();
    auto put = (*s)->put("new", "2");
    ASSERT_FALSE(put.ok());
    EXPECT_NE(put.error().find("state directory " + dir.path + " is full"), std::string::npos) << put.error();
    EXPECT_FALSE((*s)->erase("kept").ok());
    EXPECT_TRUE((*s)->put("kept", "1").ok()) << "storing the stored value again writes nothing";
    EXPECT_EQ((*s)->entries().size(), 1u) << "a refused change leaves memory as it was";
  }
  auto s = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ((*s)->entries().size(), 1u);
  EXPECT_EQ((*s)->entries().count("kept"), 1u);
  ASSERT_TRUE((*s)->put("new", "2").ok()) << "with the reserve back, the change succeeds";
}

void fill(const std::string& dir, int n, std::size_t compact_after) {
  auto s = DurableStore::open(dir, "t", {.compact_after_records = compact_after}, nullptr);
  ASSERT_TRUE(s.ok()) << s.error();
  for (int i = 0; i < n; ++i) ASSERT_TRUE((*s)->put("k" + std::to_string(i), "v").ok());
}

TEST(DurableStore, CorruptSnapshotIsReportedAndLeftAlone) {
  TempDir dir;
  fill(dir.path, 30, 2);
  const std::string snap = dir.path + "/t.snap";
  std::string bytes = slurp(snap);
  ASSERT_FALSE(bytes.empty());
  bytes[bytes.size() / 2] ^= 0x55;
  spit(snap, bytes);
  auto s = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find(snap), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("corrupt"), std::string::npos) << s.error();
  EXPECT_EQ(slurp(snap), bytes) << "never silently reset";
}

TEST(DurableStore, PartialSnapshotIsReported) {
  TempDir dir;
  fill(dir.path, 30, 2);
  const std::string snap = dir.path + "/t.snap";
  const std::string bytes = slurp(snap);
  spit(snap, bytes.substr(0, bytes.size() - 7));
  auto s = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("truncated"), std::string::npos) << s.error();
}

TEST(DurableStore, BadChecksumInJournalIsReported) {
  TempDir dir;
  fill(dir.path, 5, 1000);
  const std::string journal = dir.path + "/t.journal";
  std::string bytes = slurp(journal);
  bytes[kJournalHeaderBytes + kRecordHeaderBytes + 3] ^= 0x01;  // first record's body
  spit(journal, bytes);
  auto s = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("checksum"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find(journal), std::string::npos) << s.error();
}

TEST(DurableStore, MissingSnapshotBehindJournalIsReported) {
  TempDir dir;
  fill(dir.path, 30, 2);
  fs::remove(dir.path + "/t.snap");
  auto s = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("missing"), std::string::npos) << s.error();
}

TEST(DurableStore, TornJournalTailIsDiscardedAndReported) {
  TempDir dir;
  fill(dir.path, 5, 1000);
  const std::string journal = dir.path + "/t.journal";
  std::string bytes = slurp(journal);
  const auto extra = encode_record({6, Op::put, "k5", "v"});
  spit(journal, bytes + extra.substr(0, extra.size() - 3));
  std::vector<std::string> notes;
  auto s = DurableStore::open(dir.path, "t", {}, &notes);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ((*s)->entries().size(), 5u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("interrupted"), std::string::npos) << notes[0];
  ASSERT_TRUE((*s)->put("after", "x").ok());
  s->reset();
  auto again = DurableStore::open(dir.path, "t", {}, nullptr);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ((*again)->entries().size(), 6u);
}

// ---------- the VNI store killed at every step ----------

using Step = DurableStore::Step;

Allocator fresh_allocator() {
  auto a = Allocator::create({PoolSpec{"federation", {Range{1000, 2000}}, {}}}, 60000);
  return std::move(a).value();
}

// Child: allocates networks n0, n1, ... and reports "name vni" on `fd` after each one returned
// (i.e. was acknowledged); it is SIGKILLed at the `occurrence`-th time it reaches `step`.
[[noreturn]] void child_allocate(const std::string& dir, Step step, int occurrence, int fd, int start) {
  int seen = 0;
  DurableStore::Options options;
  options.compact_after_records = 3;  // compaction often, so its steps are reached too
  options.crash_hook = [&](Step s) {
    if (s == step && ++seen == occurrence) ::raise(SIGKILL);
  };
  auto store = PersistentAllocator::open(dir, fresh_allocator(), options, nullptr);
  if (!store) _exit(3);
  for (int i = start; i < start + 80; ++i) {
    const std::string name = "n" + std::to_string(i);
    auto r = (*store)->allocate(name, {}, 0, 0);
    if (!r) _exit(4);
    if (i % 5 == 4) {  // releases too, so held records go through the same steps
      if (!(*store)->release("n" + std::to_string(i - 2), 0)) _exit(5);
    }
    const std::string line = name + " " + std::to_string(r->vni) + "\n";
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(6);
  }
  _exit(0);
}

struct Acked {
  std::map<std::string, std::uint32_t> vni_of;
};

Acked run_child(const std::string& dir, Step step, int occurrence, int start, bool* killed) {
  int pipefd[2];
  EXPECT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    child_allocate(dir, step, occurrence, pipefd[1], start);
  }
  ::close(pipefd[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  *killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (!*killed) {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed: " << status;
  }
  Acked acked;
  std::istringstream in(text);
  std::string name;
  std::uint32_t vni;
  while (in >> name >> vni) acked.vni_of[name] = vni;
  return acked;
}

class CrashAtEveryStep : public ::testing::TestWithParam<std::tuple<Step, int>> {};

TEST_P(CrashAtEveryStep, NoVniLostOrGivenTwice) {
  const auto [step, occurrence] = GetParam();
  TempDir dir;
  bool killed = false;
  Acked first = run_child(dir.path, step, occurrence, 0, &killed);
  ASSERT_TRUE(killed) << "the crash point was never reached";
  // A second crash on top of the first recovery, at the same step.
  Acked second = run_child(dir.path, step, occurrence, 100, &killed);
  std::vector<std::string> notes;
  auto store = PersistentAllocator::open(dir.path, fresh_allocator(), {}, &notes);
  ASSERT_TRUE(store.ok()) << "recovery failed: " << store.error();
  auto& alloc = (*store)->allocator();
  for (const auto* acked : {&first, &second}) {
    for (const auto& [name, vni] : acked->vni_of) {
      const int index = std::stoi(name.substr(1));
      // n(i) is released right before n(i+2) is acknowledged; that release may be in flight
      // when the child dies (durable or not: both are correct).
      const bool release_acked = (index % 5 == 2) && acked->vni_of.count("n" + std::to_string(index + 2));
      const bool release_in_flight = (index % 5 == 2) && !release_acked;
      const Allocation* live = alloc.find_network(name);
      const Allocation* rec = alloc.find_vni(vni);
      ASSERT_NE(rec, nullptr) << name << "'s VNI " << vni << " was lost";
      EXPECT_EQ(rec->network, name) << "VNI " << vni;
      if (release_acked) {
        EXPECT_EQ(rec->state, State::held) << name << " was released";
      } else if (!(release_in_flight && rec->state == State::held)) {
        ASSERT_NE(live, nullptr) << name << " lost its VNI";
        EXPECT_EQ(live->vni, vni) << name << " changed VNI";
      }
    }
  }
  std::set<std::uint32_t> vnis;
  std::set<std::string> live_names;
  for (const auto& r : alloc.list()) {
    EXPECT_TRUE(vnis.insert(r.vni).second) << "VNI " << r.vni << " twice";
    if (r.state != State::held) {
      EXPECT_TRUE(live_names.insert(r.network).second) << r.network;
    }
  }
  // Allocating on after recovery never hands out a VNI somebody holds.
  for (int i = 0; i < 30; ++i) {
    auto r = (*store)->allocate("after" + std::to_string(i), {}, 0, 0);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(vnis.count(r->vni), 0u) << "VNI " << r->vni << " given twice after recovery";
    vnis.insert(r->vni);
  }
}

std::string step_name(const ::testing::TestParamInfo<std::tuple<Step, int>>& info) {
  static const char* names[] = {"journal_partial_write", "journal_written", "journal_synced",
                                "snapshot_temp_written", "snapshot_temp_synced_before_rename",
                                "snapshot_renamed", "snapshot_dir_synced", "journal_reset"};
  return std::string(names[static_cast<int>(std::get<0>(info.param))]) + "_" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Steps, CrashAtEveryStep,
    ::testing::Combine(::testing::Values(Step::journal_partial_write, Step::journal_written,
                                         Step::journal_synced, Step::snapshot_temp_written,
                                         Step::snapshot_temp_synced, Step::snapshot_renamed,
                                         Step::snapshot_dir_synced, Step::journal_reset),
                       ::testing::Values(1, 2, 3)),
    step_name);

TEST(VniStore, SameNameSameVniAfterRestartAndCorruptionRefused) {
  TempDir dir;
  std::map<std::string, std::uint32_t> first;
  {
    auto s = PersistentAllocator::open(dir.path, fresh_allocator(), {}, nullptr);
    ASSERT_TRUE(s.ok()) << s.error();
    for (int i = 0; i < 20; ++i) first["n" + std::to_string(i)] = (*s)->allocate("n" + std::to_string(i), {}, 0, 0)->vni;
  }
  {
    auto s = PersistentAllocator::open(dir.path, fresh_allocator(), {}, nullptr);
    ASSERT_TRUE(s.ok()) << s.error();
    for (const auto& [name, vni] : first) EXPECT_EQ((*s)->allocate(name, {}, 0, 0)->vni, vni);
  }
  const std::string journal = dir.path + "/vnis.journal";
  std::string bytes = slurp(journal);
  bytes[bytes.size() / 2] ^= 0x10;
  spit(journal, bytes);
  auto s = PersistentAllocator::open(dir.path, fresh_allocator(), {}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("corrupt"), std::string::npos) << s.error();
}

TEST(PersistentAllocator, AdoptRecordsAVniDecidedElsewhere) {
  TempDir dir;
  {
    auto s = PersistentAllocator::open(dir.path, fresh_allocator(), {}, nullptr);
    ASSERT_TRUE(s.ok()) << s.error();
    ASSERT_TRUE((*s)->allocate("mine", {}, 0, 0));
    ASSERT_TRUE((*s)->allocate("gone", {}, 0, 0));
    const auto gone = (*s)->allocator().find_network("gone")->vni;
    ASSERT_TRUE((*s)->release("gone", 0));
    // The federation gives "fed" the VNI held down here, and moves "mine" elsewhere.
    auto fed = (*s)->adopt(Allocation{gone, "federation", "fed", State::allocated, 0});
    ASSERT_TRUE(fed.ok()) << fed.error();
    ASSERT_TRUE((*s)->adopt(Allocation{1900, "federation", "mine", State::allocated, 0}).ok());
    // A VNI a live network has here is refused.
    auto clash = (*s)->adopt(Allocation{1900, "federation", "other", State::allocated, 0});
    ASSERT_FALSE(clash.ok());
    EXPECT_NE(clash.error().find("network 'mine'"), std::string::npos) << clash.error();
  }
  auto s = PersistentAllocator::open(dir.path, fresh_allocator(), {}, nullptr);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ((*s)->allocator().find_network("mine")->vni, 1900u);
  ASSERT_NE((*s)->allocator().find_network("fed"), nullptr);
  EXPECT_EQ((*s)->allocator().list().size(), 2u);
}

}  // namespace
