// RcuSlot: publication waits for every online reader's quiescent report before it frees the
// old object (dataplane/runtime/rcu_slot.hpp, docs/conventions.md: table publication).
#include <gtest/gtest.h>

#include <rte_pause.h>
#include <rte_rcu_qsbr.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "dataplane/runtime/rcu_slot.hpp"

namespace vxfed::dataplane {
namespace {

struct Tracked {
  explicit Tracked(int v, std::atomic<int>* destroyed) : value(v), destroyed(destroyed) {}
  ~Tracked() { destroyed->fetch_add(1); }
  int value;
  std::atomic<int>* destroyed;
};

// A QSBR variable for up to 4 reader threads, as the runtime allocates one.
struct Qsbr {
  Qsbr() {
    const std::size_t size = rte_rcu_qsbr_get_memsize(4);
    mem = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(RTE_CACHE_LINE_SIZE, size));
    rte_rcu_qsbr_init(mem, 4);
  }
  ~Qsbr() { std::free(mem); }
  rte_rcu_qsbr* mem;
};

TEST(RcuSlot, EmptyUntilTheFirstPublication) {
  Qsbr qs;
  RcuSlot<Tracked> slot(qs.mem);
  EXPECT_EQ(slot.read(), nullptr);
}

TEST(RcuSlot, PublishInstallsTheNewObjectAndFreesTheOld) {
  Qsbr qs;
  std::atomic<int> destroyed{0};
  RcuSlot<Tracked> slot(qs.mem);
  slot.publish(std::make_unique<Tracked>(1, &destroyed));
  ASSERT_NE(slot.read(), nullptr);
  EXPECT_EQ(slot.read()->value, 1);
  EXPECT_EQ(destroyed.load(), 0);
  slot.publish(std::make_unique<Tracked>(2, &destroyed));
  EXPECT_EQ(slot.read()->value, 2);
  EXPECT_EQ(destroyed.load(), 1);  // the first one, after the (empty) grace period
}

TEST(RcuSlot, DestructorFreesTheObjectInForce) {
  Qsbr qs;
  std::atomic<int> destroyed{0};
  {
    RcuSlot<Tracked> slot(qs.mem);
    slot.publish(std::make_unique<Tracked>(1, &destroyed));
  }
  EXPECT_EQ(destroyed.load(), 1);
}

TEST(RcuSlot, OfflineReadersDoNotHoldUpPublication) {
  Qsbr qs;
  std::atomic<int> destroyed{0};
  RcuSlot<Tracked> slot(qs.mem);
  slot.publish(std::make_unique<Tracked>(1, &destroyed));
  ASSERT_EQ(rte_rcu_qsbr_thread_register(qs.mem, 0), 0);  // registered, never online
  slot.publish(std::make_unique<Tracked>(2, &destroyed));  // would hang if it waited for it
  EXPECT_EQ(destroyed.load(), 1);
  rte_rcu_qsbr_thread_unregister(qs.mem, 0);
}

TEST(RcuSlot, PublishReturnsOnlyAfterAnOnlineReaderReportsQuiescence) {
  Qsbr qs;
  std::atomic<int> destroyed{0};
  RcuSlot<Tracked> slot(qs.mem);
  slot.publish(std::make_unique<Tracked>(1, &destroyed));

  std::atomic<bool> holding{false}, publishing{false}, published{false};
  bool old_alive_while_held = false, published_before_report = true;
  int value_while_held = 0;
  std::thread reader([&] {
    rte_rcu_qsbr_thread_register(qs.mem, 0);
    rte_rcu_qsbr_thread_online(qs.mem, 0);
    const Tracked* held = slot.read();
    holding = true;
    while (!publishing) rte_pause();
    // Give the publisher time to reach its grace period wait; it must not get past it.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    value_while_held = held->value;
    old_alive_while_held = destroyed.load() == 0;
    published_before_report = published.load();
    while (!published) {  // from here on it holds nothing
      rte_rcu_qsbr_quiescent(qs.mem, 0);
      rte_pause();
    }
    rte_rcu_qsbr_thread_offline(qs.mem, 0);
    rte_rcu_qsbr_thread_unregister(qs.mem, 0);
  });
  while (!holding) rte_pause();
  std::thread publisher([&] {
    publishing = true;
    slot.publish(std::make_unique<Tracked>(2, &destroyed));
    published = true;
  });
  publisher.join();
  reader.join();
  EXPECT_FALSE(published_before_report);
  EXPECT_TRUE(old_alive_while_held);
  EXPECT_EQ(value_while_held, 1);
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(slot.read()->value, 2);
}

}  // namespace
}  // namespace vxfed::dataplane
