// The underlay's ICMP to our VTEP: is it a fragmentation-needed about a VXLAN packet we sent,
// and toward which VTEP, at which MTU? A pure parser over the frame's bytes (no DPDK; the
// fuzzer runs it on arbitrary input), bounds-checked before every read like parse.hpp's.
#pragma once

#include <cstdint>
#include <span>

namespace vxfed::dataplane {

struct UnderlayIcmp {
  enum class Kind : std::uint8_t {
    NotIcmp,     // not IPv4 carrying ICMP: for the other parsers
    Ignored,     // ICMP, but not a usable fragmentation-needed about our own VXLAN packet
    FragNeeded,  // vtep_ip_be and mtu are set
  };
  Kind kind = Kind::NotIcmp;
  std::uint32_t vtep_ip_be = 0;  // the quoted packet's destination: the VTEP it was going to
  std::uint16_t mtu = 0;         // next-hop MTU the router named (host order, > 0)
};

// `first`: the first segment (the whole ICMP message must be in it, else Ignored);
// `packet_len`: the frame's length. A fragmentation-needed (type 3 code 4, RFC 1191) counts
// when: the outer IPv4 header and the ICMP checksums are right, it is addressed to
// `local_vtep_ip_be` and is not a fragment, and it quotes an IPv4 header from our VTEP
// (`local_vtep_ip_be`) carrying UDP to the VXLAN port, with the 8 UDP bytes. A next-hop MTU
// of 0 (routers older than RFC 1191) is Ignored: no guessing from the plateau table.
UnderlayIcmp parse_underlay_icmp(std::span<const std::uint8_t> first, std::uint32_t packet_len,
                                 std::uint32_t local_vtep_ip_be);

}  // namespace vxfed::dataplane
