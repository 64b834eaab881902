// libFuzzer target for the connection-tracking table and its ICMP-error quote parser
// (dataplane/core/conntrack.cpp, docs/conntrack.md), built with clang and ASan/UBSan, without
// DPDK. The first byte picks the mode:
//   even: the rest is an ICMP error handed to icmp_error_quoted_tuple(); what it accepts must
//         carry the VNI asked for, and ports only where the quote can hold them.
//   odd:  the rest is a program of 8-byte operations on a table of 64 flows (insert with or
//         without NAT, a packet of a flow in either direction, erase, sweep, time passing) over
//         a few addresses and ports, so keys collide, buckets overflow and entries expire. After
//         every operation: a flow just inserted is found from both ends, a packet's hit is the
//         tuple it was looked up with, the size never passes the capacity, and a sweep never
//         removes more than it visited.
#include <cstddef>
#include <cstdint>
#include <span>

#include "dataplane/core/conntrack.hpp"

namespace dp = vxfed::dataplane;

namespace {

void check_quote(std::span<const std::uint8_t> icmp) {
  dp::FlowTuple t;
  if (!dp::icmp_error_quoted_tuple(icmp, 4242, &t)) return;
  if (t.vni != 4242) __builtin_trap();
  const bool has_ports = t.protocol == 6 || t.protocol == 17 || t.protocol == 1;
  if (!has_ports && (t.src_port_be != 0 || t.dst_port_be != 0)) __builtin_trap();
  if (t.protocol == 1 && t.src_port_be != t.dst_port_be) __builtin_trap();  // the echo identifier, twice
}

dp::FlowTuple tuple_of(const std::uint8_t* op) {
  dp::FlowTuple t;
  t.src_ip_be = 0x0a000000u | (op[1] & 3);  // four addresses, four ports, three protocols
  t.dst_ip_be = 0x0a000000u | (op[2] & 3);
  t.src_port_be = static_cast<std::uint16_t>(1000 + (op[3] & 3));
  t.dst_port_be = static_cast<std::uint16_t>(1000 + (op[4] & 3));
  t.protocol = static_cast<std::uint8_t>((op[5] % 3 == 0) ? 6 : (op[5] % 3 == 1) ? 17 : 1);
  if (t.protocol == 1) t.dst_port_be = t.src_port_be;
  t.vni = op[5] >> 7;
  return t;
}

void check_table(const std::uint8_t* data, std::size_t size) {
  dp::ConntrackConfig cfg;
  cfg.capacity = 64;
  auto made = dp::ConntrackTable::create(cfg);
  if (!made) __builtin_trap();
  dp::ConntrackTable& table = **made;
  std::uint64_t now = 1;
  for (std::size_t i = 0; i + 8 <= size; i += 8) {
    const std::uint8_t* op = data + i;
    const dp::FlowTuple t = tuple_of(op);
    const std::uint8_t flags = op[6];
    switch (op[0] % 6) {
      case 0:
      case 1: {  // a new flow; with NAT when the op says so
        dp::NatTarget nat{0x0b000000u | (op[7] & 3), static_cast<std::uint16_t>(2000 + (op[7] >> 6))};
        const dp::InsertResult r = table.insert(t, op[0] % 6 == 1 ? &nat : nullptr, op[7], flags, now);
        if (r.status == dp::InsertStatus::Inserted) {
          const dp::ConntrackHit fwd = table.find(t, dp::conntrack_key_hash(t), now);
          if (!fwd || fwd.entry != r.hit.entry || fwd.direction != dp::FlowDirection::Original) __builtin_trap();
          const dp::FlowTuple reply = r.hit.entry->reply;
          const dp::ConntrackHit rev = table.find(reply, dp::conntrack_key_hash(reply), now);
          // (A flow from an endpoint to itself reads the same both ways: Original wins.)
          if (!rev || rev.entry != r.hit.entry ||
              (rev.direction != dp::FlowDirection::Reply && !(reply == r.hit.entry->original)))
            __builtin_trap();
        }
        break;
      }
      case 2: {  // a packet, from either end
        const dp::FlowTuple p = (op[7] & 1) ? reversed(t) : t;
        const dp::ConntrackHit hit = table.find(p, dp::conntrack_key_hash(p), now);
        if (hit) {
          const dp::FlowTuple& seen = hit.direction == dp::FlowDirection::Original ? hit.entry->original
                                                                                   : hit.entry->reply;
          if (!(seen == p)) __builtin_trap();
          table.track(hit, flags, now);
        }
        break;
      }
      case 3: {
        const dp::ConntrackHit hit = table.find(t, dp::conntrack_key_hash(t), now);
        if (hit) table.erase(hit.entry);
        break;
      }
      case 4: {
        const std::uint32_t before = table.size();
        const dp::SweepResult s = table.sweep(now, op[7] % 80);
        if (s.expired > s.visited || table.size() + s.expired != before) __builtin_trap();
        break;
      }
      default:
        now += std::uint64_t{op[7]} * op[7];  // up to ~65,000 ticks: past every timeout
    }
    if (table.size() > table.capacity()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0)
    check_quote(std::span<const std::uint8_t>(data + 1, size - 1));
  else
    check_table(data + 1, size - 1);
  return 0;
}
