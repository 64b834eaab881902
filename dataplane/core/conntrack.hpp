// Connection tracking: a fixed-capacity table of IPv4 flows (5-tuple + VNI) with their state,
// an opaque policy value and an optional destination NAT, shared by network policy (a flow
// admitted once is kept, its replies allowed) and global services (a flow keeps the backend it
// was given, its replies and ICMP errors are translated back). Design, timeouts and what the
// pipeline still has to do: docs/conntrack.md.
//
// Ownership: one table per worker lcore, written and read by that worker only (RSS gives each
// worker its own flows), so there are no locks and no atomics; the control side never touches a
// worker's table while the worker runs. docs/conventions.md: hot path — after create() nothing
// allocates, nothing reads a clock (the caller passes `now` in its own ticks), nothing logs.
#pragma once

#include <emmintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "common/result.hpp"
#include "dataplane/core/flow_hash.hpp"

namespace vxfed::dataplane {

// A packet's flow as the packet path holds it: addresses and ports in network order (`_be`,
// docs/conventions.md: wire headers), the VNI in host order (24 bits) because tenants on
// different VNIs may reuse addresses. ICMP echo request/reply: the identifier in BOTH ports,
// so that a reply's tuple is the request's with the endpoints swapped (icmp_echo_tuple()).
// Other protocols and non-first fragments: ports 0.
struct FlowTuple {
  std::uint32_t src_ip_be = 0;
  std::uint32_t dst_ip_be = 0;
  std::uint16_t src_port_be = 0;
  std::uint16_t dst_port_be = 0;
  std::uint32_t vni = 0;
  std::uint8_t protocol = 0;

  // Every field at once, without a branch per field (a conntrack hit compares one or two):
  // addresses as one 64-bit word, ports and VNI as another, then the protocol (the padding
  // after it is never read).
  bool operator==(const FlowTuple& o) const {
    std::uint64_t a[2], b[2];
    std::memcpy(a, this, 16);
    std::memcpy(b, &o, 16);
    return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | std::uint64_t(protocol ^ o.protocol)) == 0;
  }
};

// A tuple as a burst loop holds it in registers (the words of FlowTuple's first 16 bytes, and
// the protocol): a lookup from these compares the entry's words with registers, without the
// tuple stored first and read back.
//   addresses = src_ip_be | dst_ip_be << 32, ports_vni = src_port_be | dst_port_be << 16 | vni << 32
struct FlowKeyWords {
  std::uint64_t addresses = 0;
  std::uint64_t ports_vni = 0;
  std::uint8_t protocol = 0;

  static FlowKeyWords of(const FlowTuple& t) {
    FlowKeyWords k;
    std::memcpy(&k.addresses, &t.src_ip_be, 8);
    std::memcpy(&k.ports_vni, &t.src_port_be, 8);
    k.protocol = t.protocol;
    return k;
  }
  // True when the tuple is this key (FlowTuple::operator==, one side in registers).
  bool is(const FlowTuple& t) const {
    std::uint64_t a[2];
    std::memcpy(a, &t, 16);
    return ((a[0] ^ addresses) | (a[1] ^ ports_vni) | std::uint64_t(t.protocol ^ protocol)) == 0;
  }
};

// The same flow seen from the other end: endpoints swapped.
static_assert(offsetof(FlowTuple, src_ip_be) == 0 && offsetof(FlowTuple, dst_ip_be) == 4 &&
                  offsetof(FlowTuple, src_port_be) == 8 && offsetof(FlowTuple, dst_port_be) == 10 &&
                  offsetof(FlowTuple, vni) == 12 && offsetof(FlowTuple, protocol) == 16,
              "FlowTuple::operator== reads the first 16 bytes as the addresses, ports and VNI");

constexpr FlowTuple reversed(const FlowTuple& t) {
  return FlowTuple{t.dst_ip_be, t.src_ip_be, t.dst_port_be, t.src_port_be, t.vni, t.protocol};
}

constexpr FlowTuple icmp_echo_tuple(std::uint32_t src_ip_be, std::uint32_t dst_ip_be,
                                    std::uint16_t identifier_be, std::uint32_t vni) {
  return FlowTuple{src_ip_be, dst_ip_be, identifier_be, identifier_be, vni, 1};
}

// The table's key hash: the project's flow hash (flow_hash.hpp, CRC-32C) over the tuple as
// the packet carries it, per direction, with the VNI's 24 bits beside the protocol and ports
// (kPolicyZone and the other high bits are left out: the key compare tells zones apart). Each
// direction of a flow is its own key (the table stores both), so a lookup hashes the two
// words a packet's headers give with one load each, and no ordering of the endpoints is done.
// From the words in registers: `addresses` = src_ip_be | dst_ip_be << 32 and `ports` =
// src_port_be | dst_port_be << 16, as one load each finds them in the packet.
//
// FlowKeysOf holds that layout for one VNI: the key and its hash from the flow hash's words
// as the burst loops load them (flow_hash.hpp: `addresses`, and `proto_ports` = protocol |
// ports << 8), without a tuple stored. `vni_field`: what the key holds as its VNI (the VNI, with
// kPolicyZone for policy flows; the hash takes its low 24 bits).
class FlowKeysOf {
 public:
  explicit FlowKeysOf(std::uint32_t vni_field)
      : hash_bits_(std::uint64_t{vni_field & 0xffffffu} << 40), key_bits_(std::uint64_t{vni_field} << 32) {}
  std::uint32_t hash(std::uint64_t addresses, std::uint64_t proto_ports) const {
    return flow_hash_words(addresses, proto_ports | hash_bits_);
  }
  FlowKeyWords key(std::uint64_t addresses, std::uint64_t proto_ports) const {
    return FlowKeyWords{addresses, (proto_ports >> 8) | key_bits_, static_cast<std::uint8_t>(proto_ports)};
  }

 private:
  std::uint64_t hash_bits_;  // the VNI as the key hash takes it (24 bits above protocol and ports)
  std::uint64_t key_bits_;   // and as the key holds it (beside the ports)
};
inline std::uint32_t conntrack_key_hash(std::uint64_t addresses, std::uint8_t protocol, std::uint32_t ports,
                                        std::uint32_t vni) {
  return FlowKeysOf(vni).hash(addresses, std::uint64_t{protocol} | std::uint64_t{ports} << 8);
}
inline std::uint32_t conntrack_key_hash(const FlowTuple& t) {
  std::uint64_t addresses;
  std::uint32_t ports;
  std::memcpy(&addresses, &t.src_ip_be, 8);
  std::memcpy(&ports, &t.src_port_be, 4);
  return conntrack_key_hash(addresses, t.protocol, ports, t.vni);
}
// Writes the ports and the VNI (adjacent in FlowTuple) with one 8-byte store. A packet path
// that fills a tuple this way, and its addresses with one 8-byte store, lets the key compare's
// two 8-byte loads (FlowTuple::operator==) be forwarded from the stores; a load that spans two
// smaller stores still in flight waits until they are written (~20 cycles a packet, measured
// in docs/services.md "Cost").
inline void set_ports_and_vni(FlowTuple& t, std::uint32_t ports, std::uint32_t vni) {
  const std::uint64_t word = ports | std::uint64_t{vni} << 32;
  std::memcpy(&t.src_port_be, &word, 8);
}

// Destination NAT of a service flow: the client sent to VIP:port (the original tuple's
// destination), the worker rewrites it to the backend. ICMP echo: the address only (the
// identifier is kept), nat_port_be is ignored.
struct NatTarget {
  std::uint32_t ip_be = 0;
  std::uint16_t port_be = 0;
};

// Times in the caller's ticks (TSC cycles, or anything monotonic). Defaults follow Linux's
// nf_conntrack sysctls; from_seconds() scales them. A state's timeout restarts on every packet.
struct ConntrackTimeouts {
  std::uint64_t tcp_syn_sent;     // SYN seen, nothing back            (Linux: 120 s)
  std::uint64_t tcp_syn_recv;     // SYN-ACK back, handshake unfinished (60 s)
  std::uint64_t tcp_established;  // (5 days)
  std::uint64_t tcp_fin_wait;     // one side sent FIN                  (120 s)
  std::uint64_t tcp_time_wait;    // both sides sent FIN                (120 s)
  std::uint64_t tcp_close;        // RST seen                           (10 s)
  std::uint64_t udp_unreplied;    // one direction only, or replied once (30 s)
  std::uint64_t udp_stream;       // traffic after the reply: a stream  (120 s; 180 s in older kernels)
  std::uint64_t icmp;             // echo and the rest                  (30 s)
  std::uint64_t other;            // any other IP protocol              (600 s)

  static ConntrackTimeouts from_seconds(std::uint64_t ticks_per_second);
};

enum class ConnState : std::uint8_t {
  // TCP, by the flags seen (a simplified nf_conntrack: no sequence-number window checks).
  TcpSynSent,
  TcpSynRecv,
  TcpEstablished,
  TcpFinWait,   // one direction sent FIN
  TcpTimeWait,  // both directions sent FIN
  TcpClose,     // RST seen
  // UDP, ICMP and other protocols, by the directions seen.
  Unreplied,  // original direction only
  Replied,    // the reply direction seen once
  Stream,     // UDP: traffic after the reply (longer timeout)
};
const char* conn_state_name(ConnState s);

enum class FlowDirection : std::uint8_t { Original, Reply };

// One tracked flow. `original` is the tuple of the first packet (client -> VIP:port for a
// service); `reply` is the tuple a reply carries: reversed(original) without NAT,
// backend -> client with it. Both are keys of the table (see ConntrackTable).
struct alignas(64) ConntrackEntry {
  FlowTuple original;
  FlowTuple reply;
  std::uint64_t last_seen = 0;  // caller's ticks, updated by track()
  // The timeout of `state` (ConntrackTable::timeout()), set with every change of state, so a
  // hit's expiry check is a subtract and a compare, without a switch over the state.
  std::uint64_t lifetime = 0;
  std::uint32_t policy = 0;     // opaque: the policy code's verdict/identity, never read here
  ConnState state = ConnState::Unreplied;
  bool has_nat = false;
  std::uint8_t fin_seen = 0;   // TCP: bit 0 original sent FIN, bit 1 reply sent FIN
  bool in_use = false;

  // NAT target of the original direction (valid when has_nat): reply.src_*.
  NatTarget nat() const { return {reply.src_ip_be, reply.src_port_be}; }
};
static_assert(sizeof(ConntrackEntry) == 64);

struct ConntrackHit {
  ConntrackEntry* entry = nullptr;  // nullptr: no live flow has this tuple
  FlowDirection direction = FlowDirection::Original;
  explicit operator bool() const { return entry != nullptr; }
};

enum class InsertStatus : std::uint8_t {
  Inserted,
  Exists,     // a live flow already has this original tuple (returned in `hit`)
  TableFull,  // no free entry (and no expired one met while probing): count a drop
  ProbeFull,  // no free slot within the bounded probe of the tuple's hash: count a drop
  Clash,      // another live flow already uses this flow's reply tuple (NAT to a backend that
              // the client also reaches directly with the same ports): count a drop
  Invalid,    // TCP whose first packet is a RST (nothing to track)
};
const char* insert_status_name(InsertStatus s);

struct InsertResult {
  InsertStatus status;
  ConntrackHit hit;  // the new entry (Inserted) or the existing one (Exists)
};

struct ConntrackConfig {
  std::uint32_t capacity = 65536;  // flows (entries); each takes two key slots
  ConntrackTimeouts timeouts = ConntrackTimeouts::from_seconds(1);  // default: `now` in seconds
};

struct SweepResult {
  std::uint32_t visited = 0;
  std::uint32_t expired = 0;
};

// The table. Keys are conntrack_key_hash() of a tuple, per direction: every flow is stored
// under two slots, its original tuple's and its reply tuple's (backend -> client for a NAT
// flow), both pointing to its entry. A slot holds the 32-bit hash and the entry index; a hit
// is confirmed by comparing the packet's tuple with the entry's
// original (direction Original) or reply (direction Reply) tuple.
//
// Slots live in 64-byte buckets of 7, probed linearly over at most kMaxProbeBuckets buckets
// from the hash's home bucket. Each bucket counts the keys that passed it because it was
// full ("overflow"), so a lookup stops at the first bucket whose count is 0: a miss usually
// costs one cache line, never more than kMaxProbeBuckets.
class ConntrackTable {
 public:
  static constexpr std::uint32_t kSlotsPerBucket = 7;
  // 8 refused a few translated inserts per million at 1k-1M flows in perf/conntrack; 16 none.
  static constexpr std::uint32_t kMaxProbeBuckets = 16;
  static constexpr std::uint32_t kMaxCapacity = 1u << 26;

  // Allocates everything the table will ever use. Fails on capacity 0 or > kMaxCapacity, or a
  // zero timeout.
  static Result<std::unique_ptr<ConntrackTable>> create(const ConntrackConfig& config);
  ~ConntrackTable();
  ConntrackTable(const ConntrackTable&) = delete;
  ConntrackTable& operator=(const ConntrackTable&) = delete;

  // The live flow a packet belongs to, and the packet's direction in it. An entry past its
  // timeout is a miss (left for insert() or sweep() to reclaim). Does not update the entry.
  ConntrackHit find(const FlowTuple& packet, std::uint64_t now) const {
    return find(packet, conntrack_key_hash(packet), now);
  }

  // For a burst: prefetch() every packet's home bucket first (it returns the tuple's hash),
  // then find() each with that hash, so the burst's cache misses overlap instead of coming
  // one after the other (docs/conntrack.md has the figures with and without).
  std::uint32_t prefetch(const FlowTuple& packet) const {
    const std::uint32_t h = conntrack_key_hash(packet);
    prefetch_hash(h);
    return h;
  }
  // The same for a key hash already taken (conntrack_key_hash()).
  void prefetch_hash(std::uint32_t h) const {
    __builtin_prefetch(reinterpret_cast<const char*>(buckets_.get()) + std::size_t{h & bucket_mask_} * 64);
  }
  // Inline: the packet path's policy and service lookups call it per packet.
  ConntrackHit find(const FlowTuple& packet, std::uint32_t hash, std::uint64_t now) const {
    FlowDirection dir;
    const std::uint32_t index = find_index(packet, hash, &dir);
    if (index == kNoIndex || expired(entries_[index], now)) return {};
    return {&entries_[index], dir};
  }
  // The same, the tuple given as the words a burst loop loaded (conntrack_key_hash's `hash`).
  // Always inline: a burst loop's lookup, whose key words stay in registers.
  [[gnu::always_inline]] ConntrackHit find(const FlowKeyWords& key, std::uint32_t hash, std::uint64_t now) const {
    FlowDirection dir;
    const std::uint32_t index = find_index(key, hash, &dir);
    if (index == kNoIndex || expired(entries_[index], now)) return {};
    return {&entries_[index], dir};
  }

  // Starts tracking `original` (the packet that opens the flow: its TCP flags, ignored for
  // other protocols), with a destination NAT when `nat` is given. While probing for a slot
  // it reclaims expired flows it meets, so a table full of dead flows still admits new ones.
  InsertResult insert(const FlowTuple& original, const NatTarget* nat, std::uint32_t policy,
                      std::uint8_t tcp_flags, std::uint64_t now);

  // A packet of a known flow: its state from the TCP flags (ignored for other protocols) and
  // direction, its last-seen time.
  // Inline for what a stream's packets mostly are (a UDP/ICMP/other flow whose state this
  // packet does not change: its time only); TCP and state changes go out of line.
  void track(const ConntrackHit& hit, std::uint8_t tcp_flags, std::uint64_t now) {
    ConntrackEntry& e = *hit.entry;
    if (e.original.protocol != kTcp &&
        (hit.direction == FlowDirection::Original ? e.state != ConnState::Replied : e.state != ConnState::Unreplied)) {
      e.last_seen = now;
      return;
    }
    track_slow(hit, tcp_flags, now);
  }
  // The same, the TCP flags read by `tcp_flags()` only when the entry needs them (a TCP flow,
  // or a change of state): a burst loop's UDP packet does not read its L4 header's flags byte.
  // (track() keeps its own test: inlined into the uplink burst, time_only() there cost the
  // decap loop's register allocation 6-8 instructions a packet, with or without policy.)
  template <class TcpFlags>
  [[gnu::always_inline]] void track_lazy(const ConntrackHit& hit, TcpFlags tcp_flags, std::uint64_t now) {
    if (time_only(hit)) {
      hit.entry->last_seen = now;
      return;
    }
    track_slow(hit, tcp_flags(), now);
  }
  // Whether a packet of `hit` changes its entry's time only: a UDP, ICMP or other flow whose
  // state this direction does not change (the original direction of a flow not Replied, a
  // reply to one not Unreplied). TCP's states are none of these (advance_state() keeps them
  // apart), so one test of the state against the direction's set tells it, protocol unread.
  static bool time_only(const ConntrackHit& hit) {
    constexpr auto bit = [](ConnState s) { return 1u << static_cast<unsigned>(s); };
    constexpr unsigned kOriginal = bit(ConnState::Unreplied) | bit(ConnState::Stream);
    constexpr unsigned kReply = bit(ConnState::Replied) | bit(ConnState::Stream);
    const unsigned set = hit.direction == FlowDirection::Original ? kOriginal : kReply;
    return (set >> static_cast<unsigned>(hit.entry->state)) & 1u;
  }

  // The flow an ICMP error (destination unreachable, time exceeded, parameter problem) is
  // about, from the tuple of the packet it quotes. The quoted packet went the opposite way to
  // the error, as it left the sender (after NAT): for a service flow the router quotes
  // client -> backend; the error then travels in the Reply direction and the caller rewrites
  // the quoted destination (and the error's source, if it is the backend) back to VIP:port.
  ConntrackHit find_icmp_error(const FlowTuple& quoted, std::uint64_t now) const {
    return find(reversed(quoted), now);
  }

  void erase(ConntrackEntry* entry);

  // Visits at most `max_entries` entries, round-robin from where the last call stopped, and
  // erases those past their timeout: the worker calls it once per loop iteration, so expiry
  // is spread out and never a long pause.
  SweepResult sweep(std::uint64_t now, std::uint32_t max_entries);

  bool expired(const ConntrackEntry& e, std::uint64_t now) const { return now - e.last_seen >= e.lifetime; }
  // The timeout of an entry's state (what its `lifetime` holds).
  std::uint64_t timeout(const ConntrackEntry& e) const {
    switch (e.state) {
      case ConnState::TcpSynSent: return timeouts_.tcp_syn_sent;
      case ConnState::TcpSynRecv: return timeouts_.tcp_syn_recv;
      case ConnState::TcpEstablished: return timeouts_.tcp_established;
      case ConnState::TcpFinWait: return timeouts_.tcp_fin_wait;
      case ConnState::TcpTimeWait: return timeouts_.tcp_time_wait;
      case ConnState::TcpClose: return timeouts_.tcp_close;
      case ConnState::Unreplied:
      case ConnState::Replied:
        if (e.original.protocol == kUdp) return timeouts_.udp_unreplied;
        return e.original.protocol == kIcmp ? timeouts_.icmp : timeouts_.other;
      case ConnState::Stream: return timeouts_.udp_stream;
    }
    return timeouts_.other;
  }

  std::uint32_t size() const { return size_; }
  std::uint32_t capacity() const { return capacity_; }
  std::uint32_t bucket_count() const { return bucket_mask_ + 1; }
  // Entries by index (0..capacity-1), in_use or not: for tests, dumps and the sweep.
  const ConntrackEntry& entry_at(std::uint32_t index) const { return entries_[index]; }

 private:
  static constexpr std::uint8_t kTcp = 6, kUdp = 17, kIcmp = 1;  // IP protocol numbers
  static constexpr std::uint32_t kNoIndex = 0xffffffffu;

  // One cache line: the slots' hashes, their entry indices (kNoIndex: empty), and how many
  // keys homed in an earlier bucket live past this one (the lookup goes on only while it is
  // not 0).
  struct alignas(64) Bucket {
    std::uint32_t hash[kSlotsPerBucket];
    std::uint32_t index[kSlotsPerBucket];
    std::uint32_t overflow;
    std::uint32_t unused;
  };
  ConntrackTable(std::uint32_t capacity, std::uint32_t buckets, const ConntrackTimeouts& t);

  // Bit i set when hashes[i] == h, i < 7 (a bucket's slots): the 7 hashes compared at once
  // with two overlapping 4-lane SSE2 compares (slots 0-3 and 3-6), not a branch per slot.
  static std::uint32_t match_mask(const std::uint32_t* hashes, std::uint32_t h) {
    const __m128i want = _mm_set1_epi32(static_cast<int>(h));
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hashes));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hashes + 3));
    const auto lo_bits = static_cast<std::uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(lo, want))));
    const auto hi_bits = static_cast<std::uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(hi, want))));
    return lo_bits | hi_bits << 3;
  }
  static_assert(kSlotsPerBucket == 7, "match_mask compares exactly 7 slots");

  // The entry index for a tuple with hash `h`, or kNoIndex. Inline (find() is per packet).
  std::uint32_t find_index(const FlowTuple& t, std::uint32_t h, FlowDirection* dir) const {
    return find_index(FlowKeyWords::of(t), h, dir);
  }
  [[gnu::always_inline]] std::uint32_t find_index(const FlowKeyWords& t, std::uint32_t h, FlowDirection* dir) const {
    const std::uint32_t home = h & bucket_mask_;
    // The home bucket's first slot alone first: at the loads the table runs at, most keys sit
    // there, and the 7-slot compare below costs more than this one test.
    {
      const Bucket& b = buckets_[home];
      const std::uint32_t index = b.index[0];
      if (b.hash[0] == h && index != kNoIndex) [[likely]] {
        const ConntrackEntry& e = entries_[index];
        if (t.is(e.original)) {
          *dir = FlowDirection::Original;
          return index;
        }
        if (t.is(e.reply)) {
          *dir = FlowDirection::Reply;
          return index;
        }
      }
    }
    for (std::uint32_t p = 0; p < kMaxProbeBuckets; ++p) {
      const Bucket& b = buckets_[(home + p) & bucket_mask_];
      for (std::uint32_t m = match_mask(b.hash, h); m != 0; m &= m - 1) {
        const std::uint32_t i = static_cast<std::uint32_t>(__builtin_ctz(m));
        if (b.index[i] == kNoIndex) continue;  // a freed slot keeps its old hash
        const ConntrackEntry& e = entries_[b.index[i]];
        if (t.is(e.original)) {
          *dir = FlowDirection::Original;
          return b.index[i];
        }
        if (t.is(e.reply)) {
          *dir = FlowDirection::Reply;
          return b.index[i];
        }
      }
      if (b.overflow == 0) break;  // no key homed at or before here went further
    }
    return kNoIndex;
  }
  // track() for TCP and for a state change.
  void track_slow(const ConntrackHit& hit, std::uint8_t tcp_flags, std::uint64_t now);
  void advance_state(const ConntrackHit& hit, std::uint8_t tcp_flags);  // the state machine alone
  bool add_key(std::uint32_t h, std::uint32_t index, std::uint64_t now);
  void remove_key(std::uint32_t h, std::uint32_t index);
  void release(std::uint32_t index);  // the entry back on the free stack, its keys already gone

  std::uint32_t capacity_;
  std::uint32_t bucket_mask_;
  ConntrackTimeouts timeouts_;
  std::unique_ptr<Bucket[]> buckets_;
  std::unique_ptr<ConntrackEntry[]> entries_;
  std::unique_ptr<std::uint32_t[]> free_;  // stack of free entry indices
  std::uint32_t free_top_ = 0;
  std::uint32_t size_ = 0;
  std::uint32_t sweep_cursor_ = 0;
};

// The tuple of the packet an ICMP error quotes. `icmp` starts at the ICMP header of the error
// (type, code, checksum, 4 bytes, then the quoted IPv4 header and at least 8 bytes of its
// payload, RFC 792); `vni` is the flow's VNI (the error came on it). False when the message is
// not an error type (3 destination unreachable, 11 time exceeded, 12 parameter problem), is
// truncated, or quotes something that is not IPv4. A quoted ICMP echo gives its identifier in
// both ports; a quoted non-first fragment gives ports 0. Bounds-checked before every read.
bool icmp_error_quoted_tuple(std::span<const std::uint8_t> icmp, std::uint32_t vni, FlowTuple* out);

}  // namespace vxfed::dataplane
