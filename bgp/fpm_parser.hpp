// FPM stream parser: pure functions over byte spans, bounds-checked before every read
// (docs/conventions.md: parsers). No allocation, no I/O, no exceptions.
//
// Wire format (FRR's dplane_fpm_nl, the "FPM" framing of fpm/fpm.h):
//   FPM header, 4 bytes, network order: version (1) | type (1 = netlink) | length (2 bytes,
//   the whole frame *including* the header).
//   Payload: one or more netlink messages (nlmsghdr, 4-byte aligned), e.g. RTM_NEWROUTE /
//   RTM_DELROUTE carrying struct rtmsg and rtattrs (RTA_DST, RTA_GATEWAY, RTA_OIF,
//   RTA_PRIORITY, RTA_TABLE, RTA_MULTIPATH with a list of rtnexthop, each with its own
//   nested attributes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/net/ipv4.hpp"

namespace vxfed::bgp::fpm {

inline constexpr std::size_t kHeaderSize = 4;
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::uint8_t kTypeNetlink = 1;
inline constexpr std::uint8_t kRtprotBgp = 186;     // RTPROT_BGP
inline constexpr std::uint32_t kRtTableMain = 254;  // RT_TABLE_MAIN
inline constexpr std::size_t kMaxNextHops = 32;     // more are dropped and flagged

using Bytes = std::span<const std::uint8_t>;

enum class FrameStatus : std::uint8_t {
  kOk,           // a whole frame is available: header + payload
  kNeedMore,     // not enough bytes yet (a stream reader waits for more)
  kBadVersion,   // version != 1: the stream cannot be trusted; close the connection
  kBadType,      // type != netlink (e.g. protobuf, which we did not ask for)
  kBadLength,    // length < 4: cannot advance; close the connection
};
const char* to_string(FrameStatus s);

struct Frame {
  std::uint8_t version = 0;
  std::uint8_t type = 0;
  std::uint16_t length = 0;  // whole frame, header included
  Bytes payload;             // valid only when status is kOk (or kBadType: lets callers skip it)
};

// Reads the frame at the start of `buf`. On kOk and kBadType, `out.length` bytes may be
// consumed to move on to the next frame.
FrameStatus parse_frame(Bytes buf, Frame& out);

// Netlink message types we understand; anything else is skipped.
inline constexpr std::uint16_t kRtmNewRoute = 24;  // RTM_NEWROUTE
inline constexpr std::uint16_t kRtmDelRoute = 25;  // RTM_DELROUTE

// Checks that the payload is a well-formed sequence of netlink messages: every nlmsg_len is
// >= 16 and fits in what is left; the aligned lengths add up to the payload. A frame that
// fails is dropped whole (we cannot know where the next message starts).
bool netlink_framing_ok(Bytes payload);

// Iterates the netlink messages of a payload that passed netlink_framing_ok.
class NetlinkIterator {
 public:
  explicit NetlinkIterator(Bytes payload) : rest_(payload) {}
  // Next message (header included); false at the end or on a malformed length.
  bool next(Bytes& message, std::uint16_t& type);

 private:
  Bytes rest_;
};

struct NextHop {
  std::uint32_t gateway = 0;  // host order; 0: none (directly connected)
  std::uint32_t ifindex = 0;
  std::uint8_t weight = 1;    // rtnh_hops + 1, as the kernel does
};

struct RouteMessage {
  bool is_delete = false;
  std::uint16_t nlmsg_flags = 0;
  std::uint8_t family = 0;
  std::uint8_t protocol = 0;
  std::uint8_t type = 0;       // rtm_type (RTN_UNICAST = 1, RTN_BLACKHOLE = 6, ...)
  std::uint32_t table = 0;     // RTA_TABLE if present, else rtm_table
  std::uint32_t priority = 0;  // RTA_PRIORITY (metric)
  net::Ipv4Prefix prefix;
  std::array<NextHop, kMaxNextHops> next_hops{};
  std::uint8_t next_hop_count = 0;
  bool next_hops_truncated = false;  // more than kMaxNextHops in RTA_MULTIPATH
  bool multipath = false;            // RTA_MULTIPATH was present (possibly empty)
  std::uint16_t unknown_attributes = 0;
  // Not netlink: set by the BMP RIB (bmp_rib.hpp) when every peer's path of the prefix carries
  // the GBP mark (gbp_mark.hpp). zebra's FPM stream has no communities: false from it, always.
  bool gbp_mark = false;
};

enum class RouteStatus : std::uint8_t {
  kRoute,        // an IPv4 route message, fields filled
  kNotRoute,     // another netlink type (RTM_NEWLINK, RTM_NEWNEIGH, NLMSG_DONE, ...): skip
  kNotIpv4,      // rtm_family != AF_INET: skip
  kMalformed,    // a bound or length was wrong: drop this message and count it
};
const char* to_string(RouteStatus s);

// Parses one netlink message (as yielded by NetlinkIterator). `why` receives a static
// description on kMalformed.
RouteStatus parse_route(Bytes message, RouteMessage& out, const char** why = nullptr);

}  // namespace vxfed::bgp::fpm
