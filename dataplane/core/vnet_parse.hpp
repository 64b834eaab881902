// The vnet header (wire/virtio_net.hpp) of a frame received from an AF_PACKET socket, checked
// against the frame's own headers (docs/pod-ports.md: vnet headers). Pure: bytes in, verdict
// out, no DPDK; fuzzed with the other parsers (tests/dataplane/fuzz).
//
// The header is the kernel's description of the skb: a pending checksum (NEEDS_CSUM: the L4
// checksum field holds only the pseudo-header sum, the data itself is trusted), a verified
// one (DATA_VALID), and for a super-packet how to cut it (gso_type, gso_size). None of its
// numbers is used unless the headers parse to exactly what it claims: csum_start must be
// where the TCP or UDP header starts, csum_offset that protocol's checksum field, a
// super-packet must be one whole unfragmented IPv4 TCP/UDP packet filling the frame.
// hdr_len is only the sender's hint of how much to keep linear and is ignored.
#pragma once

#include <cstdint>

#include "dataplane/core/drop_reasons.hpp"
#include "dataplane/core/parse.hpp"
#include "dataplane/core/wire/virtio_net.hpp"

namespace vxfed::dataplane {

enum class L4Checksum : std::uint8_t {
  Complete,  // whatever the packet holds, unverified (the receiver checks it)
  Verified,  // correct and verified by the kernel (DATA_VALID)
  Partial,   // NEEDS_CSUM: pseudo-header sum in the field, data trusted; someone must finish it
};

enum class Segmentation : std::uint8_t { None, Tcp, Udp };

// What a frame's offload metadata means, once checked. Offsets are from the frame's start;
// for a frame from the uplink they describe the inner (encapsulated) packet.
struct FrameOffload {
  L4Checksum checksum = L4Checksum::Complete;
  Segmentation gso = Segmentation::None;
  std::uint8_t l4_proto = 0;    // 6 or 17 when checksum is Partial or gso is not None
  std::uint16_t l3_offset = 0;  // where the (inner) IPv4 header starts
  std::uint16_t l3_len = 0;     // its length (options included)
  std::uint16_t l4_len = 0;     // TCP header with options, or 8 for UDP
  std::uint16_t gso_size = 0;   // payload bytes per segment
  bool encapsulated = false;    // uplink: the metadata is about the inner packet of a VXLAN frame
};

// The IPv4 packet whose header starts at l3 and its TCP/UDP header, bounds-checked inside
// `first` (and packet_len). True when it is a whole (unfragmented) IPv4 TCP or UDP packet
// with its L4 header readable; fills o's l4_proto, l3_offset, l3_len, l4_len and *ip_end
// (where the IPv4 packet ends, from the frame's start).
bool locate_ipv4_l4(ByteSpan first, std::uint32_t packet_len, std::uint32_t l3, FrameOffload& o,
                    std::uint32_t* ip_end);

struct VnetVerdict {
  bool ok = true;
  DropReason drop = DropReason::BadVnetHeader;  // when !ok
  FrameOffload offload;
};

// A frame from a pod (Ethernet, then IPv4 or anything else). Frames that are not IPv4 get
// no offload state (the pipeline drops them for what they are); IPv4 with a pending checksum
// must be TCP or UDP with csum_start/csum_offset on its checksum field; super-packets
// (GSO_TCPV4, GSO_UDP_L4, with NEEDS_CSUM) must also fill the frame exactly and have a
// gso_size whose segments fit in an IPv4 packet. UDP fragmentation offload, IPv6 GSO on an
// IPv4 frame, unknown flags and a checksum state on a fragment are refused.
VnetVerdict parse_pod_vnet(const wire::VirtioNetHeader& h, ByteSpan first, std::uint32_t packet_len);

// A frame from the uplink. A pending checksum is taken when it is the inner TCP/UDP
// checksum of a VXLAN frame (the encapsulating dataplane or kernel left it to be finished),
// and ignored when it is the outer UDP checksum (stripped with the outer headers) or the
// frame is no VXLAN frame (the pipeline drops those for what they are). DATA_VALID gives no
// state: it does not say which of the two headers' checksums was verified. Super-packets
// from the underlay are refused (a wire carries frames within the MTU; docs/pod-ports.md).
VnetVerdict parse_uplink_vnet(const wire::VirtioNetHeader& h, ByteSpan first, std::uint32_t packet_len);

// A UDP super-packet from the uplink (GSO_UDP_L4, the outer UDP checksum pending): VXLAN
// datagrams that a peer handed its kernel as one (--uplink-gso) and a veth delivered whole.
// Taken when the frame is one whole IPv4 packet without options, UDP to the VXLAN port,
// filling the frame with a UDP length to match, csum_start/csum_offset on that UDP
// checksum, and gso_size room for VXLAN + inner Ethernet + IPv4 in each datagram; the
// caller cuts it into its datagrams (uplink_super.hpp). parse_uplink_vnet refuses every
// gso_type; this one is asked first for GSO_UDP_L4.
struct UplinkSuperPacket {
  bool ok = false;
  std::uint16_t gso_size = 0;     // UDP payload bytes per datagram (the last may be shorter)
  std::uint32_t payload_len = 0;  // UDP payload bytes in all
};
UplinkSuperPacket parse_uplink_super(const wire::VirtioNetHeader& h, ByteSpan first, std::uint32_t packet_len);

}  // namespace vxfed::dataplane
