// Cutting a UDP super-packet from the uplink into the VXLAN frames it carries
// (docs/pod-ports.md, "The uplink's UDP super-packets"). A peer dataplane with --uplink-gso
// hands its kernel a pod's super-packet as one GSO_UDP_L4 packet of VXLAN datagrams; a NIC
// or the kernel cuts it on the way out, but a veth delivers it whole, and our AF_PACKET
// socket receives it as it is (parse_uplink_super in vnet_parse.hpp has checked it). The
// pipeline takes frames as on the wire, so it gets the datagrams as the frames the sender's
// kernel would have made.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>

#include "dataplane/core/vnet_parse.hpp"

namespace vxfed::dataplane {

// The most datagrams one super-packet may carry (64 KiB at a 1500-byte underlay MTU is 45).
constexpr unsigned kMaxUplinkSuperDatagrams = 64;

enum class SplitResult : std::uint8_t { Done, Refused, NoMbufs };

// Cuts m (checked by parse_uplink_super as `s`; its outer headers in the first mbuf) into its
// datagrams: new mbufs from `pool` into out[0..), each the outer Ethernet, IPv4 and UDP
// headers with the datagram's IPv4 total length, ID + i and header checksum, UDP length and
// a zero UDP checksum (the sender left it pending; none is as valid for VXLAN over IPv4),
// then the datagram's bytes. Each frame's inner TCP or UDP checksum is verified here; when
// right it is handed on pending (the field back to the pseudo-header sum, the mbuf marked
// RTE_MBUF_F_RX_L4_CKSUM_NONE as for a peer that left it pending), so that the pod's
// segments can be coalesced again; when wrong or absent the frame keeps its bytes and no
// state, and the pod's kernel judges it. Frees m in every case. *count is how many frames;
// Refused (more than kMaxUplinkSuperDatagrams, or a datagram larger than an mbuf) and
// NoMbufs leave none.
SplitResult split_uplink_super(rte_mbuf* m, const UplinkSuperPacket& s, rte_mempool* pool, rte_mbuf** out,
                               unsigned* count);

}  // namespace vxfed::dataplane
