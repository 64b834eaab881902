// The BGP-4 messages the scale bed's speaker sends and the few it must read (RFC 4271, with
// 4-octet ASNs from RFC 6793, capabilities from RFC 5492, multiprotocol from RFC 4760, route
// refresh from RFC 2918 when offered, End-of-RIB from RFC 4724). Pure functions over byte buffers: no I/O.
//
// The speaker stands for many nodes, each announcing its /26 block with its own VTEP as next
// hop; UPDATEs carry ORIGIN IGP, AS_PATH (empty on iBGP, the local AS on eBGP), NEXT_HOP and,
// on iBGP, LOCAL_PREF 100 (what ExaBGP, the speaker before, sent: no communities). Routes that
// share a next hop share UPDATEs (up to the 4,096-byte limit), as ExaBGP packs them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"

namespace vxfed::perf::speaker {

using Bytes = std::span<const std::uint8_t>;

inline constexpr std::size_t kHeaderSize = 19;
inline constexpr std::size_t kMaxMessage = 4096;  // RFC 4271 4.1 (no extended messages offered)
inline constexpr std::uint16_t kAsTrans = 23456;  // RFC 6793: an ASN above 65,535 in 2 bytes

enum class MessageType : std::uint8_t { open = 1, update = 2, notification = 3, keepalive = 4, route_refresh = 5 };

// NOTIFICATION error codes and the subcodes this speaker sends (RFC 4271 4.5, 6.x).
enum class ErrorCode : std::uint8_t {
  header = 1,
  open = 2,
  update = 3,
  hold_timer_expired = 4,
  fsm = 5,
  cease = 6,
};
inline constexpr std::uint8_t kHeaderNotSynchronized = 1, kHeaderBadLength = 2, kHeaderBadType = 3;
inline constexpr std::uint8_t kOpenUnsupportedVersion = 1, kOpenBadPeerAs = 2, kOpenBadBgpId = 3,
                              kOpenUnacceptableHold = 6;
inline constexpr std::uint8_t kCeaseAdministrativeShutdown = 2;  // RFC 4486

struct Route {
  net::Ipv4Prefix prefix;
  net::Ipv4Addr next_hop;
};

// What an OPEN of ours says.
struct OpenParams {
  std::uint32_t local_as = 0;
  std::uint16_t hold_s = 30;
  net::Ipv4Addr bgp_id;
  // Off in the bed, as ExaBGP (its default) had it: offered, a reflector's bgpd asks for every
  // route again whenever it re-applies its inbound policy (FRR does once after its start, seen
  // in the bed's first run), and the speaker would send its whole list twice.
  bool route_refresh = false;
};
std::vector<std::uint8_t> encode_open(const OpenParams& p);
std::vector<std::uint8_t> encode_keepalive();
std::vector<std::uint8_t> encode_notification(ErrorCode code, std::uint8_t subcode, Bytes data = {});

// How UPDATEs of one session are built: iBGP (LOCAL_PREF, empty AS_PATH) or eBGP (AS_PATH of
// the local AS), and the AS_PATH's ASN width, which the OPENs negotiated.
struct UpdateParams {
  bool ibgp = true;
  std::uint32_t local_as = 0;
  bool four_byte_as = true;
};
// Appends the UPDATEs announcing `routes` to `out`; returns how many UPDATEs. Routes with the
// same next hop are packed together, in the order their next hop first appears.
std::size_t append_updates(const UpdateParams& p, std::span<const Route> routes, std::vector<std::uint8_t>& out);
// Appends one UPDATE withdrawing `prefixes` (at most what fits one message: the caller splits).
void append_withdrawal(std::span<const net::Ipv4Prefix> prefixes, std::vector<std::uint8_t>& out);
// RFC 4724's End-of-RIB for IPv4 unicast: an UPDATE with nothing in it.
void append_end_of_rib(std::vector<std::uint8_t>& out);

// A message header read from the front of a buffer.
struct Header {
  std::uint16_t length = 0;  // whole message
  std::uint8_t type = 0;
};
// A received message that breaks the rules: what to send back, and why, for the log.
struct WireError {
  ErrorCode code = ErrorCode::header;
  std::uint8_t subcode = 0;
  std::string why;
  std::vector<std::uint8_t> data;  // the NOTIFICATION's data field
};
// nullopt with `err` empty: fewer than 19 bytes, or the message is not whole yet. nullopt with
// err.why set: a broken header (the session must end with err's NOTIFICATION).
std::optional<Header> read_header(Bytes buf, std::size_t& need, WireError& err);

// A peer's OPEN, as far as the speaker needs it.
struct PeerOpen {
  std::uint8_t version = 0;
  std::uint32_t asn = 0;            // the 4-octet AS capability's when there, else My AS
  bool four_byte_as = false;
  bool ipv4_unicast = false;        // multiprotocol capability for AFI 1 / SAFI 1
  bool route_refresh = false;
  std::uint16_t hold_s = 0;
  std::uint32_t bgp_id = 0;
};
// `message`: a whole OPEN, header included. Checks version 4, the peer's AS against
// `expected_as`, the hold time (0 or >= 3) and a non-zero BGP identifier.
std::optional<PeerOpen> parse_open(Bytes message, std::uint32_t expected_as, WireError& err);

// A NOTIFICATION's code and subcode in words, for the log ("Cease/2").
std::string describe_notification(Bytes message);

}  // namespace vxfed::perf::speaker
