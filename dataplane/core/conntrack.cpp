// The connection-tracking table (conntrack.hpp): buckets of slots, the entries, the TCP state
// machine, the expiry sweep, and the parser of an ICMP error's quoted packet.
#include "dataplane/core/conntrack.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "dataplane/core/wire/icmp.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/tcp.hpp"

namespace vxfed::dataplane {

namespace {


std::uint32_t next_pow2(std::uint32_t v) {
  std::uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

ConntrackTimeouts ConntrackTimeouts::from_seconds(std::uint64_t s) {
  return ConntrackTimeouts{
      .tcp_syn_sent = 120 * s,
      .tcp_syn_recv = 60 * s,
      .tcp_established = 5 * 24 * 3600 * s,
      .tcp_fin_wait = 120 * s,
      .tcp_time_wait = 120 * s,
      .tcp_close = 10 * s,
      .udp_unreplied = 30 * s,
      .udp_stream = 120 * s,
      .icmp = 30 * s,
      .other = 600 * s,
  };
}

const char* conn_state_name(ConnState s) {
  switch (s) {
    case ConnState::TcpSynSent: return "tcp_syn_sent";
    case ConnState::TcpSynRecv: return "tcp_syn_recv";
    case ConnState::TcpEstablished: return "tcp_established";
    case ConnState::TcpFinWait: return "tcp_fin_wait";
    case ConnState::TcpTimeWait: return "tcp_time_wait";
    case ConnState::TcpClose: return "tcp_close";
    case ConnState::Unreplied: return "unreplied";
    case ConnState::Replied: return "replied";
    case ConnState::Stream: return "stream";
  }
  return "unknown";
}

const char* insert_status_name(InsertStatus s) {
  switch (s) {
    case InsertStatus::Inserted: return "inserted";
    case InsertStatus::Exists: return "exists";
    case InsertStatus::TableFull: return "table_full";
    case InsertStatus::ProbeFull: return "probe_full";
    case InsertStatus::Clash: return "clash";
    case InsertStatus::Invalid: return "invalid";
  }
  return "unknown";
}

Result<std::unique_ptr<ConntrackTable>> ConntrackTable::create(const ConntrackConfig& config) {
  if (config.capacity == 0 || config.capacity > kMaxCapacity)
    return make_error("conntrack capacity: must be 1.." + std::to_string(kMaxCapacity) + " flows (got " +
                      std::to_string(config.capacity) + ")");
  const ConntrackTimeouts& t = config.timeouts;
  for (std::uint64_t v : {t.tcp_syn_sent, t.tcp_syn_recv, t.tcp_established, t.tcp_fin_wait, t.tcp_time_wait,
                          t.tcp_close, t.udp_unreplied, t.udp_stream, t.icmp, t.other})
    if (v == 0) return make_error("conntrack timeouts: every timeout must be at least 1 tick (got 0)");
  // Sized for every flow's two keys (one per direction) at 5 keys per 7-slot bucket at most,
  // so the bounded probe almost never runs out before the entries do.
  const std::uint32_t buckets = next_pow2(std::max<std::uint32_t>(1, (config.capacity * 2u + 4) / 5));
  return std::unique_ptr<ConntrackTable>(new ConntrackTable(config.capacity, buckets, t));
}

ConntrackTable::ConntrackTable(std::uint32_t capacity, std::uint32_t buckets, const ConntrackTimeouts& t)
    : capacity_(capacity),
      bucket_mask_(buckets - 1),
      timeouts_(t),
      buckets_(new Bucket[buckets]),
      entries_(new ConntrackEntry[capacity]),
      free_(new std::uint32_t[capacity]) {
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");
  static_assert(kTcp == wire::kIpProtoTcp && kUdp == wire::kIpProtoUdp && kIcmp == wire::kIpProtoIcmp);
  for (std::uint32_t b = 0; b < buckets; ++b) {
    std::fill(std::begin(buckets_[b].hash), std::end(buckets_[b].hash), 0u);
    std::fill(std::begin(buckets_[b].index), std::end(buckets_[b].index), kNoIndex);
    buckets_[b].overflow = 0;
    buckets_[b].unused = 0;
  }
  // Lowest index on top, so a fresh table fills its entries in order (the sweep's order).
  for (std::uint32_t i = 0; i < capacity; ++i) free_[i] = capacity - 1 - i;
  free_top_ = capacity;
}

ConntrackTable::~ConntrackTable() = default;

bool ConntrackTable::add_key(std::uint32_t h, std::uint32_t index, std::uint64_t now) {
  const std::uint32_t home = h & bucket_mask_;
  auto place = [&](std::uint32_t p, std::uint32_t i) {
    Bucket& b = buckets_[(home + p) & bucket_mask_];
    b.hash[i] = h;
    b.index[i] = index;
    for (std::uint32_t q = 0; q < p; ++q) ++buckets_[(home + q) & bucket_mask_].overflow;
  };
  for (std::uint32_t p = 0; p < kMaxProbeBuckets; ++p) {
    const Bucket& b = buckets_[(home + p) & bucket_mask_];
    for (std::uint32_t i = 0; i < kSlotsPerBucket; ++i)
      if (b.index[i] == kNoIndex) {
        place(p, i);
        return true;
      }
  }
  // Every slot in reach is taken: reclaim the first expired flow among them.
  for (std::uint32_t p = 0; p < kMaxProbeBuckets; ++p) {
    const Bucket& b = buckets_[(home + p) & bucket_mask_];
    for (std::uint32_t i = 0; i < kSlotsPerBucket; ++i) {
      const std::uint32_t other = b.index[i];
      if (other == index || !expired(entries_[other], now)) continue;
      erase(&entries_[other]);  // frees slot i here (and the flow's other key, if any)
      place(p, i);
      return true;
    }
  }
  return false;
}

void ConntrackTable::remove_key(std::uint32_t h, std::uint32_t index) {
  const std::uint32_t home = h & bucket_mask_;
  for (std::uint32_t p = 0; p < kMaxProbeBuckets; ++p) {
    Bucket& b = buckets_[(home + p) & bucket_mask_];
    for (std::uint32_t i = 0; i < kSlotsPerBucket; ++i) {
      if (b.index[i] != index || b.hash[i] != h) continue;
      b.index[i] = kNoIndex;
      for (std::uint32_t q = 0; q < p; ++q) --buckets_[(home + q) & bucket_mask_].overflow;
      return;
    }
  }
}

void ConntrackTable::erase(ConntrackEntry* e) {
  const auto index = static_cast<std::uint32_t>(e - entries_.get());
  // The keys' hashes again from the tuples (an entry has no room to keep them; erasing is
  // rare next to hits). Two slots of one hash and index: each call frees one.
  remove_key(conntrack_key_hash(e->original), index);
  remove_key(conntrack_key_hash(e->reply), index);
  release(index);
}

void ConntrackTable::release(std::uint32_t index) {
  entries_[index].in_use = false;
  free_[free_top_++] = index;
  --size_;
}

InsertResult ConntrackTable::insert(const FlowTuple& original, const NatTarget* nat, std::uint32_t policy,
                                    std::uint8_t tcp_flags, std::uint64_t now) {
  const bool tcp = original.protocol == wire::kIpProtoTcp;
  if (tcp && (tcp_flags & wire::kTcpRst)) return {InsertStatus::Invalid, {}};

  FlowTuple reply = reversed(original);
  if (nat) {
    reply.src_ip_be = nat->ip_be;
    if (original.protocol != wire::kIpProtoIcmp) reply.src_port_be = nat->port_be;
  }
  const std::uint32_t h0 = conntrack_key_hash(original);
  const std::uint32_t h1 = conntrack_key_hash(reply);

  // The flow itself (as either of its tuples), and anything already using the new reply tuple:
  // a live one is returned or refused, an expired one goes.
  FlowDirection dir;
  std::uint32_t found = find_index(original, h0, &dir);
  if (found != kNoIndex) {
    if (!expired(entries_[found], now)) return {InsertStatus::Exists, {&entries_[found], dir}};
    erase(&entries_[found]);
  }
  found = find_index(reply, h1, &dir);
  if (found != kNoIndex) {
    if (!expired(entries_[found], now)) return {InsertStatus::Clash, {}};
    erase(&entries_[found]);
  }

  if (free_top_ == 0) {
    // Reclaim an expired flow among the slots this flow would use; else the table is full.
    const std::uint32_t home = h0 & bucket_mask_;
    for (std::uint32_t p = 0; p < kMaxProbeBuckets && free_top_ == 0; ++p) {
      const Bucket& b = buckets_[(home + p) & bucket_mask_];
      for (std::uint32_t i = 0; i < kSlotsPerBucket; ++i)
        if (b.index[i] != kNoIndex && expired(entries_[b.index[i]], now)) {
          erase(&entries_[b.index[i]]);
          break;
        }
    }
    if (free_top_ == 0) return {InsertStatus::TableFull, {}};
  }

  const std::uint32_t index = free_[--free_top_];
  ConntrackEntry& e = entries_[index];
  e.original = original;
  e.reply = reply;
  e.last_seen = now;
  e.policy = policy;
  e.has_nat = nat != nullptr;
  e.fin_seen = 0;
  e.in_use = true;
  if (tcp)  // a first packet without SYN is picked up mid-stream, as Linux's tcp_loose does
    e.state = (tcp_flags & (wire::kTcpSyn | wire::kTcpAck)) == wire::kTcpSyn ? ConnState::TcpSynSent
                                                                               : ConnState::TcpEstablished;
  else
    e.state = ConnState::Unreplied;
  e.lifetime = timeout(e);
  ++size_;

  if (!add_key(h0, index, now)) {
    release(index);  // no key is in
    return {InsertStatus::ProbeFull, {}};
  }
  if (!add_key(h1, index, now)) {
    remove_key(h0, index);  // only the first key is in
    release(index);
    return {InsertStatus::ProbeFull, {}};
  }
  return {InsertStatus::Inserted, {&e, FlowDirection::Original}};
}

void ConntrackTable::track_slow(const ConntrackHit& hit, std::uint8_t flags, std::uint64_t now) {
  advance_state(hit, flags);
  hit.entry->last_seen = now;
  hit.entry->lifetime = timeout(*hit.entry);
}

void ConntrackTable::advance_state(const ConntrackHit& hit, std::uint8_t flags) {
  ConntrackEntry& e = *hit.entry;
  const bool reply = hit.direction == FlowDirection::Reply;
  if (e.original.protocol != wire::kIpProtoTcp) {
    if (reply && e.state == ConnState::Unreplied)
      e.state = ConnState::Replied;
    else if (!reply && e.state == ConnState::Replied && e.original.protocol == wire::kIpProtoUdp)
      e.state = ConnState::Stream;  // simplified: Linux waits 2 s of traffic after the reply
    return;
  }
  // TCP by flags only (no sequence windows): enough to time flows out the way Linux does.
  if (flags & wire::kTcpRst) {
    e.state = ConnState::TcpClose;
    return;
  }
  if (flags & wire::kTcpSyn) {
    if (!(flags & wire::kTcpAck)) {
      // A new SYN from the client on a closed flow's ports reopens it (port reuse).
      if (!reply && (e.state == ConnState::TcpTimeWait || e.state == ConnState::TcpClose)) {
        e.state = ConnState::TcpSynSent;
        e.fin_seen = 0;
      }
    } else if (reply && e.state == ConnState::TcpSynSent) {
      e.state = ConnState::TcpSynRecv;
    }
    return;
  }
  if (flags & wire::kTcpFin) {
    if (e.state == ConnState::TcpClose) return;
    e.fin_seen |= reply ? 2 : 1;
    e.state = e.fin_seen == 3 ? ConnState::TcpTimeWait : ConnState::TcpFinWait;
    return;
  }
  if ((flags & wire::kTcpAck) && !reply && e.state == ConnState::TcpSynRecv) e.state = ConnState::TcpEstablished;
}

SweepResult ConntrackTable::sweep(std::uint64_t now, std::uint32_t max_entries) {
  SweepResult r;
  const std::uint32_t n = std::min(max_entries, capacity_);
  for (; r.visited < n; ++r.visited) {
    ConntrackEntry& e = entries_[sweep_cursor_];
    if (e.in_use && expired(e, now)) {
      erase(&e);
      ++r.expired;
    }
    if (++sweep_cursor_ == capacity_) sweep_cursor_ = 0;
  }
  return r;
}

bool icmp_error_quoted_tuple(std::span<const std::uint8_t> icmp, std::uint32_t vni, FlowTuple* out) {
  constexpr std::size_t kQuote = sizeof(wire::IcmpHeader);
  constexpr std::uint8_t kTimeExceeded = 11, kParameterProblem = 12;
  if (icmp.size() < kQuote + sizeof(wire::Ipv4Header)) return false;
  const std::uint8_t type = icmp[0];
  if (type != wire::kIcmpDestUnreachable && type != kTimeExceeded && type != kParameterProblem) return false;

  wire::Ipv4Header ip;
  std::memcpy(&ip, icmp.data() + kQuote, sizeof ip);
  const std::size_t ihl = (ip.version_ihl & 0x0f) * 4u;
  if ((ip.version_ihl >> 4) != 4 || ihl < sizeof(wire::Ipv4Header) || icmp.size() < kQuote + ihl) return false;

  FlowTuple t;
  t.src_ip_be = ip.src_be;
  t.dst_ip_be = ip.dst_be;
  t.vni = vni;
  t.protocol = ip.protocol;
  const bool first_fragment = (wire::from_be16(ip.fragment_be) & wire::kIpv4OffsetMask) == 0;
  const std::uint8_t* l4 = icmp.data() + kQuote + ihl;
  const std::size_t l4_len = icmp.size() - kQuote - ihl;
  if (first_fragment && (ip.protocol == wire::kIpProtoTcp || ip.protocol == wire::kIpProtoUdp)) {
    if (l4_len < 8) return false;  // RFC 792: the quote has 8 bytes of the datagram at least
    std::memcpy(&t.src_port_be, l4, 2);
    std::memcpy(&t.dst_port_be, l4 + 2, 2);
  } else if (first_fragment && ip.protocol == wire::kIpProtoIcmp) {
    if (l4_len < 8) return false;
    if (l4[0] == wire::kIcmpEchoRequest || l4[0] == wire::kIcmpEchoReply) {
      std::memcpy(&t.src_port_be, l4 + 4, 2);  // the identifier, in both ports (FlowTuple)
      t.dst_port_be = t.src_port_be;
    }
  }
  *out = t;
  return true;
}

}  // namespace vxfed::dataplane
