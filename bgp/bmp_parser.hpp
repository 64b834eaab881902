// BMP (RFC 7854) parser: pure functions over byte spans, bounds-checked before every read
// (docs/conventions.md: parsers). No I/O, no exceptions; the only allocation is the prefix
// lists of a route-monitoring message, into vectors the caller owns and reuses.
//
// What bgpd's BMP module (FRR's `-M bmp`) sends a station, and what vxfed reads of it:
//   common header, 6 bytes: version (3) | message length (4, the whole message) | type (1)
//   per-peer header, 42 bytes (all types but Initiation and Termination): peer type (1) |
//     flags (1: V 0x80 IPv6, L 0x40 post-policy, A 0x20 2-byte AS_PATH, O 0x10 Adj-RIB-Out) |
//     distinguisher (8) | address (16, IPv4 in the last 4) | AS (4) | BGP ID (4) | time (4+4)
//   Route Monitoring: per-peer header + one BGP UPDATE (19-byte BGP header, withdrawn routes,
//     path attributes: ORIGIN, AS_PATH, NEXT_HOP, MP_REACH_NLRI / MP_UNREACH_NLRI,
//     LARGE_COMMUNITY (for the GBP mark), ...; NLRI)
//   Peer Up: per-peer header + local address (16) | local port (2) | remote port (2) | the
//     OPEN sent | the OPEN received | information TLVs
//   Peer Down: per-peer header + reason (1) + data
//   Statistics Report: per-peer header + count (4) + TLVs (type 2, length 2, value)
//   Initiation, Termination: TLVs (type 2, length 2, value)
// vxfed serves IPv4 unicast: other address families are recognised and skipped (counted), never
// taken for IPv4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/net/ipv4.hpp"

namespace vxfed::bgp::bmp {

using Bytes = std::span<const std::uint8_t>;

inline constexpr std::size_t kCommonHeaderSize = 6;
inline constexpr std::size_t kPerPeerHeaderSize = 42;
inline constexpr std::uint8_t kVersion = 3;
// The largest message a station takes: a BGP UPDATE is at most 65,535 bytes (RFC 8654), a
// Peer Up two OPENs and some TLVs. Anything longer is a framing error.
inline constexpr std::uint32_t kMaxMessage = 1u << 17;

enum class MessageType : std::uint8_t {
  route_monitoring = 0,
  statistics_report = 1,
  peer_down = 2,
  peer_up = 3,
  initiation = 4,
  termination = 5,
  route_mirroring = 6,
};
const char* to_string(MessageType t);

enum class FrameStatus : std::uint8_t {
  ok,           // a whole message is available
  need_more,    // not enough bytes yet
  bad_version,  // version != 3: the stream cannot be trusted; close the session
  bad_length,   // length < 6 or above kMaxMessage: cannot advance safely; close the session
};
const char* to_string(FrameStatus s);

struct Frame {
  std::uint8_t version = 0;
  std::uint32_t length = 0;  // whole message, common header included
  std::uint8_t type = 0;     // MessageType, or an unknown value (skipped and counted)
  Bytes body;                // after the common header; valid on ok
};

// Reads the message at the start of `buf`; on ok, `out.length` bytes may be consumed.
FrameStatus parse_frame(Bytes buf, Frame& out);

struct PeerHeader {
  std::uint8_t peer_type = 0;   // 0 global instance, 1 RD instance, 2 local instance, 3 Loc-RIB
  std::uint8_t flags = 0;
  std::uint64_t distinguisher = 0;
  bool ipv6 = false;             // V
  bool post_policy = false;      // L
  bool two_byte_as_path = false; // A: AS_PATH carries 2-byte ASNs (a peer without 4-byte AS)
  bool adj_rib_out = false;      // O (RFC 8671)
  net::Ipv4Addr address;         // when !ipv6
  std::uint32_t asn = 0;
  std::uint32_t bgp_id = 0;
};

// Malformed input: a static text naming what was wrong (for logs and tests), and the reason
// label it is counted under.
struct Malformed {
  const char* why = "";
};

// The per-peer header at the start of `body`. nullopt (with `bad` filled) when short.
std::optional<PeerHeader> parse_peer_header(Bytes body, Malformed& bad);

// A BGP UPDATE's IPv4 unicast content.
struct Update {
  std::vector<net::Ipv4Prefix> announced;  // NLRI and MP_REACH_NLRI (AFI 1, SAFI 1)
  std::vector<net::Ipv4Prefix> withdrawn;  // withdrawn routes and MP_UNREACH_NLRI (AFI 1, SAFI 1)
  std::optional<net::Ipv4Addr> next_hop;   // NEXT_HOP, or MP_REACH_NLRI's IPv4 next hop
  bool end_of_rib = false;                 // RFC 4724: an UPDATE with nothing in it (IPv4 unicast)
  bool other_family = false;               // MP_REACH/MP_UNREACH of another AFI/SAFI: skipped
  std::uint32_t origin_as = 0;             // the last AS of the AS_PATH (0: empty path, our own AS)
  std::uint16_t as_path_length = 0;        // ASes in AS_SEQUENCE segments (AS_SET counts one)
  // LARGE_COMMUNITY (RFC 8092) holds the GBP mark (bgp/gbp_mark.hpp): the announcing node takes
  // VXLAN-GBP.
  bool gbp_mark = false;

  void clear() {
    announced.clear();
    withdrawn.clear();
    next_hop.reset();
    end_of_rib = other_family = false;
    origin_as = 0;
    as_path_length = 0;
    gbp_mark = false;
  }
};

// A BGP message (19-byte header included) that must be an UPDATE. `two_byte_as_path` is the
// per-peer header's A flag. false (with `bad`) for anything malformed: a wrong marker, a length
// that disagrees, a prefix longer than 32 or past its field, an attribute past its field, an
// AS_PATH whose segments do not add up, a NEXT_HOP that is not 4 bytes, a LARGE_COMMUNITY whose
// length is not a multiple of 12 (RFC 8092 calls it malformed), announcements without a
// next hop. A malformed UPDATE changes nothing (RFC 7606's treat-as-withdraw is the speaker's
// business; a station drops and counts).
bool parse_update(Bytes bgp_message, bool two_byte_as_path, Update& out, Malformed& bad);

// An OPEN's Graceful Restart capability (code 64, RFC 4724; the N bit from RFC 8538), as far as
// vxfed needs it: whether it is there, its restart time and whether it names IPv4 unicast.
struct GracefulRestartCap {
  bool present = false;
  bool restart_state = false;       // R: the sender has just restarted
  bool notification = false;        // N (RFC 8538): GR also across a NOTIFICATION but Hard Reset
  std::uint16_t restart_time_s = 0; // 12 bits
  bool ipv4_unicast = false;        // an AFI 1 / SAFI 1 tuple: its routes are kept by a helper
  bool ipv4_unicast_forwarding = false;  // that tuple's F bit
  auto operator<=>(const GracefulRestartCap&) const = default;
};

// Peer Up's fixed part after the per-peer header: both OPEN messages must be whole BGP
// messages of type OPEN. Their capabilities (optional parameter 2; RFC 9072's extended
// parameters too) are read for Graceful Restart; parameters or capabilities that do not add up
// leave that OPEN without Graceful Restart (capabilities_malformed says why), not the Peer Up
// refused.
struct PeerUp {
  std::uint16_t local_port = 0, remote_port = 0;
  std::uint32_t sent_bgp_id = 0, received_bgp_id = 0;  // from the OPENs
  GracefulRestartCap sent_gr, received_gr;
  const char* capabilities_malformed = nullptr;
};
bool parse_peer_up(Bytes after_peer_header, PeerUp& out, Malformed& bad);

// Peer Down (RFC 7854 4.9): reason 1..5 (6 and 7 from later RFCs) and what its data says.
//   1 local system closed, NOTIFICATION sent follows; 2 local system closed, no NOTIFICATION,
//   FSM event (2 bytes) follows; 3 remote system closed with the NOTIFICATION that follows;
//   4 remote system closed, no data; 5 peer de-configured.
struct PeerDown {
  std::uint8_t reason = 0;
  std::optional<std::uint8_t> notify_code, notify_subcode;  // reasons 1 and 3, when whole
  std::optional<std::uint16_t> fsm_event;                   // reason 2, when there
};
bool parse_peer_down(Bytes after_peer_header, PeerDown& out, Malformed& bad);
inline constexpr std::uint8_t kPeerDownLocalNotify = 1, kPeerDownLocalNoNotify = 2, kPeerDownRemoteNotify = 3,
                              kPeerDownRemoteNoNotify = 4, kPeerDownDeconfigured = 5;

// Initiation / Termination / Statistics: a sequence of TLVs (type 2, length 2) that must end
// exactly at the end of the span. `count` receives how many.
bool tlvs_ok(Bytes tlvs, std::size_t& count, Malformed& bad);

// Statistics Report after the per-peer header: a 4-byte count and that many TLVs.
bool parse_statistics(Bytes after_peer_header, std::uint32_t& count, Malformed& bad);

}  // namespace vxfed::bgp::bmp
