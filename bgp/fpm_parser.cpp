#include "bgp/fpm_parser.hpp"

#include <cstring>

namespace vxfed::bgp::fpm {
namespace {

// Netlink and rtnetlink layouts (linux/netlink.h, linux/rtnetlink.h), restated here as byte
// offsets so that the parser never casts unaligned buffers to structs.
constexpr std::size_t kNlmsghdrSize = 16;  // len u32, type u16, flags u16, seq u32, pid u32
constexpr std::size_t kRtmsgSize = 12;     // family, dst_len, src_len, tos, table, protocol,
                                           // scope, type (8 x u8), flags u32
constexpr std::size_t kRtattrSize = 4;     // len u16, type u16
constexpr std::size_t kRtnexthopSize = 8;  // len u16, flags u8, hops u8, ifindex s32
constexpr std::uint8_t kAfInet = 2;

constexpr std::uint16_t kRtaDst = 1;
constexpr std::uint16_t kRtaOif = 4;
constexpr std::uint16_t kRtaGateway = 5;
constexpr std::uint16_t kRtaPriority = 6;
constexpr std::uint16_t kRtaMultipath = 9;
constexpr std::uint16_t kRtaTable = 15;

constexpr std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

// Netlink fields are host byte order (the FPM client is on the same host); FPM's own header
// is network order.
std::uint16_t host16(const std::uint8_t* p) { std::uint16_t v; std::memcpy(&v, p, 2); return v; }
std::uint32_t host32(const std::uint8_t* p) { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
std::uint32_t net32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

struct Malformed {
  const char* why;
};

// Walks rtattrs in `buf`, calling f(type, payload) for each; returns nullptr or the reason
// the sequence is malformed.
template <typename F>
const char* for_each_attr(Bytes buf, F&& f) {
  std::size_t off = 0;
  while (off < buf.size()) {
    if (buf.size() - off < kRtattrSize) return "attribute header truncated";
    std::uint16_t len = host16(&buf[off]);
    std::uint16_t type = host16(&buf[off + 2]) & 0x3fff;  // strip NLA_F_NESTED / NET_BYTEORDER
    if (len < kRtattrSize) return "attribute length below 4";
    if (len > buf.size() - off) return "attribute length beyond its message";
    if (const char* err = f(type, buf.subspan(off + kRtattrSize, len - kRtattrSize))) return err;
    off += align4(len);  // the last attribute may lack padding: off then exceeds size, loop ends
  }
  return nullptr;
}

const char* read_u32(Bytes payload, std::uint32_t& out, const char* what) {
  if (payload.size() != 4) return what;
  out = host32(payload.data());
  return nullptr;
}

}  // namespace

const char* to_string(FrameStatus s) {
  switch (s) {
    case FrameStatus::kOk: return "ok";
    case FrameStatus::kNeedMore: return "need_more";
    case FrameStatus::kBadVersion: return "bad_version";
    case FrameStatus::kBadType: return "bad_type";
    case FrameStatus::kBadLength: return "bad_length";
  }
  return "?";
}

const char* to_string(RouteStatus s) {
  switch (s) {
    case RouteStatus::kRoute: return "route";
    case RouteStatus::kNotRoute: return "not_route";
    case RouteStatus::kNotIpv4: return "not_ipv4";
    case RouteStatus::kMalformed: return "malformed";
  }
  return "?";
}

FrameStatus parse_frame(Bytes buf, Frame& out) {
  if (buf.size() < kHeaderSize) return FrameStatus::kNeedMore;
  out.version = buf[0];
  out.type = buf[1];
  out.length = static_cast<std::uint16_t>((buf[2] << 8) | buf[3]);
  out.payload = {};
  if (out.version != kVersion) return FrameStatus::kBadVersion;
  if (out.length < kHeaderSize) return FrameStatus::kBadLength;
  if (buf.size() < out.length) return FrameStatus::kNeedMore;
  out.payload = buf.subspan(kHeaderSize, out.length - kHeaderSize);
  if (out.type != kTypeNetlink) return FrameStatus::kBadType;
  return FrameStatus::kOk;
}

bool netlink_framing_ok(Bytes payload) {
  std::size_t off = 0;
  if (payload.empty()) return false;
  while (off < payload.size()) {
    if (payload.size() - off < kNlmsghdrSize) return false;
    std::uint32_t len = host32(&payload[off]);
    if (len < kNlmsghdrSize || len > payload.size() - off) return false;
    off += align4(len);
  }
  // Trailing padding of the last message may be missing (off > size) but never more than 3.
  return off - payload.size() <= 3;
}

bool NetlinkIterator::next(Bytes& message, std::uint16_t& type) {
  if (rest_.size() < kNlmsghdrSize) return false;
  std::uint32_t len = host32(rest_.data());
  if (len < kNlmsghdrSize || len > rest_.size()) return false;
  message = rest_.first(len);
  type = host16(&rest_[4]);
  std::size_t step = align4(len);
  rest_ = step >= rest_.size() ? Bytes{} : rest_.subspan(step);
  return true;
}

RouteStatus parse_route(Bytes msg, RouteMessage& out, const char** why) {
  auto malformed = [&](const char* reason) {
    if (why) *why = reason;
    return RouteStatus::kMalformed;
  };
  if (msg.size() < kNlmsghdrSize) return malformed("netlink header truncated");
  std::uint32_t nl_len = host32(msg.data());
  if (nl_len != msg.size()) return malformed("netlink length disagrees with the message");
  std::uint16_t type = host16(&msg[4]);
  if (type != kRtmNewRoute && type != kRtmDelRoute) return RouteStatus::kNotRoute;
  out = RouteMessage{};
  out.is_delete = type == kRtmDelRoute;
  out.nlmsg_flags = host16(&msg[6]);
  Bytes body = msg.subspan(kNlmsghdrSize);
  if (body.size() < kRtmsgSize) return malformed("rtmsg truncated");
  out.family = body[0];
  if (out.family != kAfInet) return RouteStatus::kNotIpv4;
  std::uint8_t dst_len = body[1];
  if (dst_len > 32) return malformed("prefix length above 32");
  out.table = body[4];
  out.protocol = body[5];
  out.type = body[7];
  bool have_dst = false;
  std::uint32_t dst = 0;
  NextHop single{};
  bool have_single = false;

  const char* err = for_each_attr(body.subspan(kRtmsgSize), [&](std::uint16_t t, Bytes p) -> const char* {
    switch (t) {
      case kRtaDst:
        if (p.size() != 4) return "RTA_DST is not 4 bytes";
        dst = net32(p.data());
        have_dst = true;
        return nullptr;
      case kRtaGateway:
        if (p.size() != 4) return "RTA_GATEWAY is not 4 bytes";
        single.gateway = net32(p.data());
        have_single = true;
        return nullptr;
      case kRtaOif:
        if (const char* e = read_u32(p, single.ifindex, "RTA_OIF is not 4 bytes")) return e;
        have_single = true;
        return nullptr;
      case kRtaPriority:
        return read_u32(p, out.priority, "RTA_PRIORITY is not 4 bytes");
      case kRtaTable:
        return read_u32(p, out.table, "RTA_TABLE is not 4 bytes");
      case kRtaMultipath: {
        out.multipath = true;
        std::size_t off = 0;
        while (off < p.size()) {
          if (p.size() - off < kRtnexthopSize) return "rtnexthop truncated";
          std::uint16_t len = host16(&p[off]);
          if (len < kRtnexthopSize || len > p.size() - off) return "rtnexthop length out of bounds";
          NextHop nh;
          nh.weight = static_cast<std::uint8_t>(p[off + 3] == 255 ? 255 : p[off + 3] + 1);
          nh.ifindex = host32(&p[off + 4]);
          const char* e = for_each_attr(p.subspan(off + kRtnexthopSize, len - kRtnexthopSize),
                                        [&](std::uint16_t nt, Bytes np) -> const char* {
                                          if (nt == kRtaGateway) {
                                            if (np.size() != 4) return "nexthop RTA_GATEWAY is not 4 bytes";
                                            nh.gateway = net32(np.data());
                                          }
                                          return nullptr;
                                        });
          if (e) return e;
          if (out.next_hop_count < kMaxNextHops) {
            out.next_hops[out.next_hop_count++] = nh;
          } else {
            out.next_hops_truncated = true;
          }
          off += align4(len);
        }
        return nullptr;
      }
      default:
        ++out.unknown_attributes;  // RTA_PREFSRC, RTA_ENCAP, RTA_NH_ID, ...: not ours
        return nullptr;
    }
  });
  if (err) return malformed(err);
  if (dst_len > 0 && !have_dst) return malformed("prefix length without RTA_DST");
  out.prefix = net::Ipv4Prefix::make(dst, dst_len);
  if (out.prefix.addr != dst) return malformed("RTA_DST has host bits set beyond the prefix length");
  // A single next hop is given inline; RTA_MULTIPATH, when present, is the whole set.
  if (!out.multipath && have_single) {
    out.next_hops[0] = single;
    out.next_hop_count = 1;
  }
  return RouteStatus::kRoute;
}

}  // namespace vxfed::bgp::fpm
