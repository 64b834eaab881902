// Coalescing of TCP segments headed for one pod into super-packets (receive offload done by
// the dataplane, docs/pod-ports.md): the pod's kernel then takes one GSO packet, as it would
// from its own GRO, instead of every 9000- or 1500-byte segment.
//
// Consecutive packets of pkts[] are merged when each has a pending checksum (its data is
// trusted: segments with a complete, unverified checksum are never merged, so the pod still
// checks them), is plain TCP/IPv4 without IP options, and continues the one before: same
// addresses, ports, TOS, TTL, DF, ACK number, window and TCP options, sequence number right
// after it, the same payload size as the first (the last may be shorter), no flag but ACK
// (PSH or FIN may end a run). The payload mbufs are chained behind the first packet (no
// copy); the first's IPv4 total length and checksum, PSH/FIN and pseudo-header sum follow the
// whole, and it is marked as a super-packet (RTE_MBUF_F_TX_TCP_SEG, tso_segsz = the size of
// the segments), at most 64 KiB and 64 segments. Order is kept: a packet that does not
// continue the run ends it and may start the next.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

namespace vxfed::dataplane {

// Coalesces pkts[0..n) in place and returns the new count.
std::uint16_t coalesce_tcp_segments(rte_mbuf** pkts, std::uint16_t n);

}  // namespace vxfed::dataplane
