// Unit tests of connection tracking (dataplane/core/conntrack.hpp): one entry for both
// directions, NAT reply keys, timeouts with a fake clock, the bounded sweep, a full table,
// ICMP errors, TCP states.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dataplane/core/conntrack.hpp"
#include "dataplane/core/wire/tcp.hpp"

namespace vxfed::dataplane {
namespace {

using wire::kTcpAck;
using wire::kTcpFin;
using wire::kTcpRst;
using wire::kTcpSyn;

constexpr std::uint8_t kTcp = 6, kUdp = 17, kIcmp = 1;
constexpr std::uint64_t kSecond = 1000;  // the fake clock's ticks: milliseconds

std::uint32_t ip(std::uint32_t host) { return htonl(host); }
std::uint16_t port(std::uint16_t host) { return htons(host); }

const std::uint32_t kClient = ip(0x0af40105);   // 10.244.1.5
const std::uint32_t kServer = ip(0x0af40209);   // 10.244.2.9
const std::uint32_t kVip = ip(0x0a600001);      // 10.96.0.1
const std::uint32_t kBackend = ip(0x0af5030a);  // 10.245.3.10 (a pod in another cluster)

FlowTuple tuple(std::uint32_t src, std::uint16_t sport, std::uint32_t dst, std::uint16_t dport,
                std::uint8_t proto = kTcp, std::uint32_t vni = 100) {
  return FlowTuple{src, dst, port(sport), port(dport), vni, proto};
}

std::unique_ptr<ConntrackTable> make_table(std::uint32_t capacity = 1024) {
  auto t = ConntrackTable::create({.capacity = capacity, .timeouts = ConntrackTimeouts::from_seconds(kSecond)});
  EXPECT_TRUE(t.ok()) << t.error();
  return std::move(*t);
}

TEST(Conntrack, CreateRefusesBadConfig) {
  auto zero = ConntrackTable::create({.capacity = 0});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("capacity"), std::string::npos) << zero.error();
  ConntrackConfig c;
  c.timeouts.icmp = 0;
  auto t = ConntrackTable::create(c);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("timeout"), std::string::npos) << t.error();
}

TEST(Conntrack, KeyHashIsPerDirectionAndTellsVnisApartButNotZones) {
  const FlowTuple t = tuple(kClient, 40000, kServer, 80);
  // Each direction is its own key (both are stored), hashed as the pipeline's flow hash reads
  // the packet's words, with the VNI beside them.
  EXPECT_NE(conntrack_key_hash(t), conntrack_key_hash(reversed(t)));
  FlowTuple other_vni = t;
  other_vni.vni = 101;
  EXPECT_NE(conntrack_key_hash(t), conntrack_key_hash(other_vni));
  // Bits above the VNI's 24 (the policy zone) are the key compare's business, not the hash's.
  FlowTuple zone = t;
  zone.vni |= 1u << 31;
  EXPECT_EQ(conntrack_key_hash(t), conntrack_key_hash(zone));
  EXPECT_NE(conntrack_key_hash(t), conntrack_key_hash(tuple(kClient, 80, kServer, 40000)));
}

TEST(Conntrack, BothDirectionsFindOneEntry) {
  auto ct = make_table();
  const FlowTuple out = tuple(kClient, 40000, kServer, 80);
  auto r = ct->insert(out, nullptr, 0xabcd, kTcpSyn, 0);
  ASSERT_EQ(r.status, InsertStatus::Inserted);
  EXPECT_EQ(r.hit.entry->policy, 0xabcdu);

  auto fwd = ct->find(out, 1);
  auto back = ct->find(reversed(out), 1);
  ASSERT_TRUE(fwd && back);
  EXPECT_EQ(fwd.entry, back.entry);
  EXPECT_EQ(fwd.direction, FlowDirection::Original);
  EXPECT_EQ(back.direction, FlowDirection::Reply);
  EXPECT_EQ(ct->size(), 1u);
  // The burst form (hash from prefetch(), then find with it) finds the same.
  EXPECT_EQ(ct->find(reversed(out), ct->prefetch(reversed(out)), 1).entry, fwd.entry);
  EXPECT_EQ(ct->prefetch(out), conntrack_key_hash(out));

  // Same addresses and ports on another VNI: another tenant, another flow.
  FlowTuple other = out;
  other.vni = 200;
  EXPECT_FALSE(ct->find(other, 1));
  EXPECT_FALSE(ct->find(tuple(kClient, 40001, kServer, 80), 1));

  // Inserting either direction again finds the flow rather than making a second one.
  auto again = ct->insert(reversed(out), nullptr, 0, kTcpSyn, 2);
  EXPECT_EQ(again.status, InsertStatus::Exists);
  EXPECT_EQ(again.hit.entry, fwd.entry);
  EXPECT_EQ(again.hit.direction, FlowDirection::Reply);
  EXPECT_EQ(ct->size(), 1u);
}

TEST(Conntrack, NatReplyTupleFindsTheEntry) {
  auto ct = make_table();
  const FlowTuple to_vip = tuple(kClient, 40000, kVip, 443);
  const NatTarget backend{kBackend, port(8443)};
  auto r = ct->insert(to_vip, &backend, 7, kTcpSyn, 0);
  ASSERT_EQ(r.status, InsertStatus::Inserted);
  EXPECT_TRUE(r.hit.entry->has_nat);
  EXPECT_EQ(r.hit.entry->nat().ip_be, kBackend);
  EXPECT_EQ(r.hit.entry->nat().port_be, port(8443));

  const FlowTuple from_backend = tuple(kBackend, 8443, kClient, 40000);
  auto reply = ct->find(from_backend, 1);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply.entry, r.hit.entry);
  EXPECT_EQ(reply.direction, FlowDirection::Reply);
  // What the reply is translated back to: the original destination, VIP:port.
  EXPECT_EQ(reply.entry->original.dst_ip_be, kVip);
  EXPECT_EQ(reply.entry->original.dst_port_be, port(443));

  EXPECT_EQ(ct->find(to_vip, 1).direction, FlowDirection::Original);
  // Neither the untranslated reply (VIP -> client) nor the client talking to the backend
  // directly belongs to the service flow.
  EXPECT_FALSE(ct->find(reversed(to_vip), 1));
  EXPECT_FALSE(ct->find(reversed(from_backend), 1));

  // A direct flow whose reply tuple would be the service flow's is refused, not merged.
  auto direct = ct->insert(reversed(from_backend), nullptr, 0, kTcpSyn, 2);
  EXPECT_EQ(direct.status, InsertStatus::Clash);

  // Erasing the flow removes both keys.
  ct->erase(reply.entry);
  EXPECT_FALSE(ct->find(to_vip, 3));
  EXPECT_FALSE(ct->find(from_backend, 3));
  EXPECT_EQ(ct->size(), 0u);
  EXPECT_EQ(ct->insert(reversed(from_backend), nullptr, 0, kTcpSyn, 4).status, InsertStatus::Inserted);
}

TEST(Conntrack, TcpStatesThroughHandshakeAndClose) {
  auto ct = make_table();
  const FlowTuple c2s = tuple(kClient, 40000, kServer, 80);
  const FlowTuple s2c = reversed(c2s);
  auto r = ct->insert(c2s, nullptr, 0, kTcpSyn, 0);
  ConntrackEntry* e = r.hit.entry;
  EXPECT_EQ(e->state, ConnState::TcpSynSent);
  EXPECT_EQ(ct->timeout(*e), 120 * kSecond);

  // An ACK from the client before the server answered changes nothing.
  ct->track(ct->find(c2s, 1), kTcpAck, 1);
  EXPECT_EQ(e->state, ConnState::TcpSynSent);
  ct->track(ct->find(s2c, 2), kTcpSyn | kTcpAck, 2);
  EXPECT_EQ(e->state, ConnState::TcpSynRecv);
  EXPECT_EQ(ct->timeout(*e), 60 * kSecond);
  // The server's own ACK does not finish the client's handshake.
  ct->track(ct->find(s2c, 3), kTcpAck, 3);
  EXPECT_EQ(e->state, ConnState::TcpSynRecv);
  ct->track(ct->find(c2s, 4), kTcpAck, 4);
  EXPECT_EQ(e->state, ConnState::TcpEstablished);
  EXPECT_EQ(ct->timeout(*e), 5 * 24 * 3600 * kSecond);

  ct->track(ct->find(s2c, 5), kTcpFin | kTcpAck, 5);
  EXPECT_EQ(e->state, ConnState::TcpFinWait);
  ct->track(ct->find(s2c, 6), kTcpFin | kTcpAck, 6);  // a retransmitted FIN: still one side
  EXPECT_EQ(e->state, ConnState::TcpFinWait);
  ct->track(ct->find(c2s, 7), kTcpFin | kTcpAck, 7);
  EXPECT_EQ(e->state, ConnState::TcpTimeWait);
  EXPECT_EQ(ct->timeout(*e), 120 * kSecond);

  // The client reuses the ports: a new SYN reopens the flow.
  ct->track(ct->find(c2s, 8), kTcpSyn, 8);
  EXPECT_EQ(e->state, ConnState::TcpSynSent);
  EXPECT_EQ(e->fin_seen, 0);
}

TEST(Conntrack, TcpResetClosesAndShortensTimeout) {
  auto ct = make_table();
  const FlowTuple c2s = tuple(kClient, 40000, kServer, 80);
  ConntrackEntry* e = ct->insert(c2s, nullptr, 0, kTcpSyn, 0).hit.entry;
  ct->track(ct->find(reversed(c2s), 1), kTcpSyn | kTcpAck, 1);
  ct->track(ct->find(c2s, 2), kTcpAck, 2);
  ASSERT_EQ(e->state, ConnState::TcpEstablished);
  ct->track(ct->find(reversed(c2s), 3), kTcpRst | kTcpAck, 3);
  EXPECT_EQ(e->state, ConnState::TcpClose);
  ct->track(ct->find(c2s, 4), kTcpFin, 4);  // nothing after a reset reopens it but a SYN
  EXPECT_EQ(e->state, ConnState::TcpClose);
  EXPECT_TRUE(ct->find(c2s, 4 + 10 * kSecond - 1));
  EXPECT_FALSE(ct->find(c2s, 4 + 10 * kSecond));
}

TEST(Conntrack, TcpFirstPacketRules) {
  auto ct = make_table();
  EXPECT_EQ(ct->insert(tuple(kClient, 1, kServer, 80), nullptr, 0, kTcpRst, 0).status, InsertStatus::Invalid);
  EXPECT_EQ(ct->size(), 0u);
  // Mid-stream (no SYN: e.g. after a restart of the forwarder) is picked up as established.
  auto r = ct->insert(tuple(kClient, 2, kServer, 80), nullptr, 0, kTcpAck, 0);
  ASSERT_EQ(r.status, InsertStatus::Inserted);
  EXPECT_EQ(r.hit.entry->state, ConnState::TcpEstablished);
}

TEST(Conntrack, UdpAndIcmpStatesAndTimeouts) {
  auto ct = make_table();
  const FlowTuple dns = tuple(kClient, 5353, kServer, 53, kUdp);
  ConntrackEntry* e = ct->insert(dns, nullptr, 0, 0, 0).hit.entry;
  EXPECT_EQ(e->state, ConnState::Unreplied);
  EXPECT_EQ(ct->timeout(*e), 30 * kSecond);
  ct->track(ct->find(dns, 1), 0, 1);
  EXPECT_EQ(e->state, ConnState::Unreplied);
  ct->track(ct->find(reversed(dns), 2), 0, 2);
  EXPECT_EQ(e->state, ConnState::Replied);
  EXPECT_EQ(ct->timeout(*e), 30 * kSecond);
  ct->track(ct->find(dns, 3), 0, 3);
  EXPECT_EQ(e->state, ConnState::Stream);
  EXPECT_EQ(ct->timeout(*e), 120 * kSecond);

  const FlowTuple ping = icmp_echo_tuple(kClient, kServer, port(77), 100);
  ConntrackEntry* p = ct->insert(ping, nullptr, 0, 0, 0).hit.entry;
  auto reply = ct->find(icmp_echo_tuple(kServer, kClient, port(77), 100), 1);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply.entry, p);
  EXPECT_EQ(reply.direction, FlowDirection::Reply);
  ct->track(reply, 0, 1);
  EXPECT_EQ(p->state, ConnState::Replied);
  EXPECT_EQ(ct->timeout(*p), 30 * kSecond);
  EXPECT_FALSE(ct->find(icmp_echo_tuple(kServer, kClient, port(78), 100), 1)) << "another identifier";
}

TEST(Conntrack, ExpiryFollowsLastSeenWithFakeClock) {
  auto ct = make_table();
  const FlowTuple dns = tuple(kClient, 5353, kServer, 53, kUdp);
  ct->insert(dns, nullptr, 0, 0, 1000);
  EXPECT_TRUE(ct->find(dns, 1000 + 30 * kSecond - 1));
  // A packet restarts the timeout.
  ct->track(ct->find(dns, 1000 + 20 * kSecond), 0, 1000 + 20 * kSecond);
  EXPECT_TRUE(ct->find(dns, 1000 + 49 * kSecond));
  EXPECT_FALSE(ct->find(dns, 1000 + 50 * kSecond));
  EXPECT_EQ(ct->size(), 1u) << "find does not reclaim; insert and sweep do";
  // A new flow on the same tuple replaces the expired one.
  auto r = ct->insert(dns, nullptr, 9, 0, 1000 + 50 * kSecond);
  EXPECT_EQ(r.status, InsertStatus::Inserted);
  EXPECT_EQ(r.hit.entry->policy, 9u);
  EXPECT_EQ(ct->size(), 1u);
}

TEST(Conntrack, SweepVisitsAtMostNAndReclaimsExpired) {
  auto ct = make_table(1000);
  // 600 UDP flows (30 s) and 100 established TCP flows (5 days).
  for (std::uint16_t i = 0; i < 600; ++i)
    ASSERT_EQ(ct->insert(tuple(kClient, 10000 + i, kServer, 53, kUdp), nullptr, 0, 0, 0).status, InsertStatus::Inserted);
  for (std::uint16_t i = 0; i < 100; ++i)
    ASSERT_EQ(ct->insert(tuple(kClient, 20000 + i, kServer, 80), nullptr, 0, kTcpAck, 0).status, InsertStatus::Inserted);
  ASSERT_EQ(ct->size(), 700u);

  const std::uint64_t later = 31 * kSecond;
  std::uint32_t expired = 0, calls = 0;
  while (calls * 64 < ct->capacity()) {
    SweepResult r = ct->sweep(later, 64);
    EXPECT_LE(r.visited, 64u);
    EXPECT_LE(r.expired, r.visited);
    expired += r.expired;
    ++calls;
  }
  EXPECT_EQ(expired, 600u);
  EXPECT_EQ(ct->size(), 100u);
  EXPECT_FALSE(ct->find(tuple(kClient, 10000, kServer, 53, kUdp), later));
  EXPECT_TRUE(ct->find(tuple(kClient, 20000, kServer, 80), later));
  // One call never visits more than the table.
  EXPECT_EQ(ct->sweep(later, 1u << 30).visited, ct->capacity());
}

TEST(Conntrack, FullTableRefusesThenReclaimsExpired) {
  auto ct = make_table(64);
  std::vector<FlowTuple> flows;
  for (std::uint16_t i = 0; i < 64; ++i) {
    flows.push_back(tuple(kClient, 30000 + i, kServer, 53, kUdp));
    ASSERT_EQ(ct->insert(flows.back(), nullptr, 0, 0, 0).status, InsertStatus::Inserted) << i;
  }
  const FlowTuple extra = tuple(kClient, 40000, kServer, 53, kUdp);
  auto full = ct->insert(extra, nullptr, 0, 0, 1);
  EXPECT_EQ(full.status, InsertStatus::TableFull);
  EXPECT_FALSE(full.hit);
  EXPECT_EQ(ct->size(), 64u);
  // Every flow still there and untouched.
  for (const FlowTuple& f : flows) EXPECT_TRUE(ct->find(f, 1));

  // Once they have expired, an insert reclaims one it meets instead of failing.
  auto later = ct->insert(extra, nullptr, 0, 0, 30 * kSecond);
  EXPECT_EQ(later.status, InsertStatus::Inserted);
  EXPECT_EQ(ct->size(), 64u);
  EXPECT_TRUE(ct->find(extra, 30 * kSecond));
}

TEST(Conntrack, ProbeIsBoundedAndOverflowCountsStayConsistent) {
  // Many more flows than one bucket holds, inserted and erased in an order that leaves holes:
  // every remaining flow must still be found (a lookup stops at a bucket whose overflow
  // count is 0, so a wrong count would lose flows).
  auto ct = make_table(4096);
  std::vector<FlowTuple> flows;
  for (std::uint32_t i = 0; i < 4000; ++i) {
    flows.push_back(tuple(kClient + htonl(i / 500), static_cast<std::uint16_t>(1024 + i), kServer, 80, kUdp));
    auto r = ct->insert(flows.back(), nullptr, 0, 0, 0);
    ASSERT_TRUE(r.status == InsertStatus::Inserted || r.status == InsertStatus::ProbeFull) << i;
    if (r.status == InsertStatus::ProbeFull) flows.pop_back();
  }
  EXPECT_GE(flows.size(), 3990u) << "the table is sized so the probe almost never runs out";
  for (std::size_t i = 0; i < flows.size(); i += 3) ct->erase(ct->find(flows[i], 0).entry);
  for (std::size_t i = 0; i < flows.size(); ++i) EXPECT_EQ(static_cast<bool>(ct->find(flows[i], 0)), i % 3 != 0) << i;
  // And a miss costs one bucket when nothing overflowed there: no overflow counts left over
  // once everything is gone (checked through the public behaviour: refill and find all).
  for (std::size_t i = 1; i < flows.size(); ++i)
    if (i % 3 != 0) ct->erase(ct->find(flows[i], 0).entry);
  EXPECT_EQ(ct->size(), 0u);
  for (const FlowTuple& f : flows) ASSERT_EQ(ct->insert(f, nullptr, 0, 0, 1).status, InsertStatus::Inserted);
  for (const FlowTuple& f : flows) EXPECT_TRUE(ct->find(f, 1));
}

// Flows whose original tuple's key has the same home bucket in a table of `buckets` buckets,
// and whose reply key homes outside the bounded probe's reach from there (so that the home
// neighbourhood holds only the original keys).
std::vector<FlowTuple> colliding(std::uint32_t buckets, std::size_t n) {
  std::vector<FlowTuple> v;
  const std::uint32_t mask = buckets - 1;
  const std::uint32_t home = conntrack_key_hash(tuple(kClient, 1024, kServer, 80, kUdp)) & mask;
  for (std::uint32_t p = 1024; v.size() < n && p < 65535; ++p) {
    const FlowTuple t = tuple(kClient, static_cast<std::uint16_t>(p), kServer, 80, kUdp);
    const std::uint32_t reply_home = conntrack_key_hash(reversed(t)) & mask;
    const std::uint32_t reply_from_home = (reply_home - home) & mask, home_from_reply = (home - reply_home) & mask;
    if ((conntrack_key_hash(t) & mask) == home && reply_from_home >= ConntrackTable::kMaxProbeBuckets &&
        home_from_reply >= ConntrackTable::kMaxProbeBuckets)
      v.push_back(t);
  }
  EXPECT_EQ(v.size(), n);
  return v;
}

TEST(Conntrack, CollidingFlowsSpillOverThenProbeFull) {
  auto ct = make_table(256);
  const std::uint32_t reach = ConntrackTable::kMaxProbeBuckets * ConntrackTable::kSlotsPerBucket;
  const auto flows = colliding(ct->bucket_count(), reach + 1);
  for (std::uint32_t i = 0; i < reach; ++i)
    ASSERT_EQ(ct->insert(flows[i], nullptr, 0, 0, 0).status, InsertStatus::Inserted) << i;
  // One more with the same home bucket: every slot within the bounded probe is taken.
  EXPECT_EQ(ct->insert(flows[reach], nullptr, 0, 0, 1).status, InsertStatus::ProbeFull);
  EXPECT_EQ(ct->size(), reach);

  // Free the home bucket's slots (the first flows in): the ones that spilled over into later
  // buckets are still found, because the home bucket still counts them as passed on.
  for (std::uint32_t i = 0; i < ConntrackTable::kSlotsPerBucket; ++i) ct->erase(ct->find(flows[i], 1).entry);
  for (std::uint32_t i = 0; i < reach; ++i)
    EXPECT_EQ(static_cast<bool>(ct->find(flows[i], 1)), i >= ConntrackTable::kSlotsPerBucket) << i;
  EXPECT_EQ(ct->insert(flows[reach], nullptr, 0, 0, 1).status, InsertStatus::Inserted);
  EXPECT_TRUE(ct->find(flows[reach], 1));

  // All expired: a colliding insert with no free slot in reach reclaims one of them.
  for (std::uint32_t i = 0; i < ConntrackTable::kSlotsPerBucket - 1; ++i)
    ASSERT_EQ(ct->insert(flows[i], nullptr, 0, 0, 1).status, InsertStatus::Inserted);
  const auto more = colliding(ct->bucket_count(), reach + 2);
  EXPECT_EQ(ct->insert(more[reach + 1], nullptr, 0, 0, 1 + 30 * kSecond).status, InsertStatus::Inserted);
  EXPECT_EQ(ct->size(), reach);
}

// An ICMP error as it arrives: ICMP header, then the quoted IPv4 header and 8 bytes of L4.
std::vector<std::uint8_t> icmp_error(std::uint8_t type, std::uint8_t code, const FlowTuple& quoted) {
  std::vector<std::uint8_t> m(8 + 20 + 8, 0);
  m[0] = type;
  m[1] = code;
  std::uint8_t* q = m.data() + 8;
  q[0] = 0x45;
  q[9] = quoted.protocol;
  std::memcpy(q + 12, &quoted.src_ip_be, 4);
  std::memcpy(q + 16, &quoted.dst_ip_be, 4);
  std::memcpy(q + 20, &quoted.src_port_be, 2);
  std::memcpy(q + 22, &quoted.dst_port_be, 2);
  return m;
}

TEST(Conntrack, IcmpErrorFindsTheServiceFlowItQuotes) {
  auto ct = make_table();
  const FlowTuple to_vip = tuple(kClient, 40000, kVip, 53, kUdp);
  const NatTarget backend{kBackend, port(5353)};
  ConntrackEntry* e = ct->insert(to_vip, &backend, 0, 0, 0).hit.entry;

  // A router between here and the backend could not deliver the translated packet
  // client -> backend and quotes it (destination unreachable, fragmentation needed).
  const auto msg = icmp_error(3, 4, tuple(kClient, 40000, kBackend, 5353, kUdp));
  FlowTuple quoted;
  ASSERT_TRUE(icmp_error_quoted_tuple(msg, 100, &quoted));
  EXPECT_EQ(quoted, tuple(kClient, 40000, kBackend, 5353, kUdp));
  auto hit = ct->find_icmp_error(quoted, 1);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.entry, e);
  EXPECT_EQ(hit.direction, FlowDirection::Reply) << "the error travels back toward the client";

  // The client itself refuses a translated reply (VIP -> client, port unreachable): the error
  // goes the original way and is translated to the backend.
  const auto refused = icmp_error(3, 3, tuple(kVip, 53, kClient, 40000, kUdp));
  ASSERT_TRUE(icmp_error_quoted_tuple(refused, 100, &quoted));
  hit = ct->find_icmp_error(quoted, 1);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit.entry, e);
  EXPECT_EQ(hit.direction, FlowDirection::Original);

  // Time exceeded about a flow nobody tracks, or on another VNI: no flow.
  const auto other = icmp_error(11, 0, tuple(kClient, 40001, kBackend, 5353, kUdp));
  ASSERT_TRUE(icmp_error_quoted_tuple(other, 100, &quoted));
  EXPECT_FALSE(ct->find_icmp_error(quoted, 1));
  ASSERT_TRUE(icmp_error_quoted_tuple(msg, 101, &quoted));
  EXPECT_FALSE(ct->find_icmp_error(quoted, 1));
}

TEST(Conntrack, IcmpErrorParserRefusesWhatIsNotAnError) {
  FlowTuple t;
  const FlowTuple q = tuple(kClient, 40000, kServer, 80);
  auto echo = icmp_error(8, 0, q);
  EXPECT_FALSE(icmp_error_quoted_tuple(echo, 1, &t)) << "an echo request is not an error";
  auto msg = icmp_error(3, 1, q);
  EXPECT_FALSE(icmp_error_quoted_tuple(std::span(msg).first(8 + 20 + 7), 1, &t)) << "TCP ports cut off";
  EXPECT_FALSE(icmp_error_quoted_tuple(std::span(msg).first(8 + 19), 1, &t));
  auto v6 = msg;
  v6[8] = 0x65;
  EXPECT_FALSE(icmp_error_quoted_tuple(v6, 1, &t)) << "not IPv4";
  auto frag = msg;
  frag[8 + 6] = 0x00;
  frag[8 + 7] = 0x10;  // offset 16 * 8: not the first fragment, no ports
  ASSERT_TRUE(icmp_error_quoted_tuple(frag, 1, &t));
  EXPECT_EQ(t.src_port_be, 0);
  EXPECT_EQ(t.dst_port_be, 0);

  // A quoted echo request gives its identifier in both ports.
  std::vector<std::uint8_t> ping = icmp_error(11, 0, FlowTuple{kClient, kServer, 0, 0, 1, kIcmp});
  ping[8 + 20] = 8;
  ping[8 + 20 + 4] = 0x12;
  ping[8 + 20 + 5] = 0x34;
  ASSERT_TRUE(icmp_error_quoted_tuple(ping, 1, &t));
  EXPECT_EQ(t, icmp_echo_tuple(kClient, kServer, port(0x1234), 1));
}

}  // namespace
}  // namespace vxfed::dataplane
