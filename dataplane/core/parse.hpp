// Pure packet parsers: functions over a byte span, no DPDK types, bounds-checked before every
// read (docs/conventions.md: parsers). The pipeline calls them on the first mbuf segment; the fuzzer
// (tests/dataplane/fuzz) calls them on arbitrary bytes.
//
// Every parser takes the bytes it may read (`first`: the first segment) and the length of
// the whole packet (`packet_len` >= first.size(); more segments may follow). A header that
// lies beyond packet_len is Truncated; one that exists but is not inside `first` is
// HeadersSplit (the pipeline requires headers in the first segment).
#pragma once

#include <cstdint>
#include <span>

#include "dataplane/core/drop_reasons.hpp"
#include "dataplane/core/wire/arp.hpp"
#include "dataplane/core/wire/ethernet.hpp"

namespace vxfed::dataplane {

using ByteSpan = std::span<const std::uint8_t>;

// The fields of an IPv4-over-Ethernet ARP packet that the dataplane uses.
struct ArpFields {
  std::uint16_t opcode = 0;          // host order: 1 request, 2 reply
  wire::MacAddress sender_mac{};
  std::uint32_t sender_ip_be = 0;
  std::uint32_t target_ip_be = 0;
};

enum class FrameKind : std::uint8_t { Drop, Arp, Vxlan, Ipv4 };

// A frame received on the uplink: VXLAN for this VTEP, ARP, or a drop with its reason.
struct UplinkFrame {
  FrameKind kind = FrameKind::Drop;
  DropReason drop = DropReason::Truncated;  // when kind == Drop
  ArpFields arp;                            // when kind == Arp
  // when kind == Vxlan:
  std::uint32_t outer_src_ip_be = 0;
  std::uint32_t vni = 0;
  std::uint32_t inner_len = 0;              // inner Ethernet frame length (from the UDP length)
  std::uint32_t inner_dst_ip_be = 0;
  std::uint16_t inner_ip_total_len = 0;     // host order
  // VXLAN-GBP (flags 0x88), when kind == Vxlan; all zero for plain VXLAN (flags 0x08).
  std::uint16_t group_policy_id = 0;        // host order: the sender's group (a pod's identity)
  bool group_policy = false;                // the G bit: group_policy_id came from the packet
  bool group_policy_applied = false;        // the A bit: the sender already applied policy
};

struct UplinkParseOptions {
  std::uint32_t local_vtep_ip_be = 0;
  bool outer_ip_checksum_verified = false;  // the NIC already checked it (RX offload flags)
};

// Validates Ethernet / IPv4 (no options, no fragment, good checksum, to our VTEP) / UDP 4789
// (length consistent with IPv4) / VXLAN (flags 0x08, or 0x88 with a Group Policy header whose
// reserved bits are zero) / inner Ethernet / inner IPv4 header.
// Bytes beyond the IPv4 total length (Ethernet padding) are ignored.
inline UplinkFrame parse_uplink_frame(ByteSpan first, std::uint32_t packet_len,
                               const UplinkParseOptions& options);

// A frame received from a pod: IPv4 (with what forwarding needs), ARP, or a drop.
struct PodFrame {
  FrameKind kind = FrameKind::Drop;
  DropReason drop = DropReason::Truncated;
  ArpFields arp;
  // when kind == Ipv4:
  std::uint32_t src_ip_be = 0;
  std::uint32_t dst_ip_be = 0;
  std::uint16_t ip_total_len = 0;   // host order
  std::uint8_t tos = 0;
  std::uint8_t protocol = 0;
  bool dont_fragment = false;
  std::uint16_t src_port_be = 0;    // TCP/UDP ports of unfragmented packets, else 0
  std::uint16_t dst_port_be = 0;
  std::uint8_t ip_header_len = 0;   // bytes
};

inline PodFrame parse_pod_frame(ByteSpan first, std::uint32_t packet_len);

// ARP after an Ethernet header (used by both parsers; exposed for tests and the fuzzer).
// Returns false (reason in *drop) if it is not a well-formed IPv4-over-Ethernet ARP.
inline bool parse_arp(ByteSpan first, std::uint32_t packet_len, ArpFields* out, DropReason* drop);

}  // namespace vxfed::dataplane

#include "dataplane/core/parse_inline.hpp"
