#include "bgp/fpm_encoder.hpp"

#include <cstring>

namespace vxfed::bgp::fpm {
namespace {

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  std::uint8_t b[2];
  std::memcpy(b, &v, 2);
  out.insert(out.end(), b, b + 2);
}
void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  std::uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}
void put_net32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 24));
  out.push_back(static_cast<std::uint8_t>(v >> 16));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}
void pad4(std::vector<std::uint8_t>& out) {
  while (out.size() % 4) out.push_back(0);
}
void attr_u32(std::vector<std::uint8_t>& out, std::uint16_t type, std::uint32_t v) {
  put16(out, 8);
  put16(out, type);
  put32(out, v);
}
void attr_addr(std::vector<std::uint8_t>& out, std::uint16_t type, std::uint32_t host_order) {
  put16(out, 8);
  put16(out, type);
  put_net32(out, host_order);
}
void set16(std::vector<std::uint8_t>& out, std::size_t at, std::uint16_t v) { std::memcpy(&out[at], &v, 2); }
void set32(std::vector<std::uint8_t>& out, std::size_t at, std::uint32_t v) { std::memcpy(&out[at], &v, 4); }

}  // namespace

void append_route_message(std::vector<std::uint8_t>& out, const RouteMessage& r) {
  pad4(out);
  const std::size_t start = out.size();
  put32(out, 0);  // nlmsg_len, patched below
  put16(out, r.is_delete ? kRtmDelRoute : kRtmNewRoute);
  put16(out, r.nlmsg_flags);
  put32(out, 0);  // seq
  put32(out, 0);  // pid
  // rtmsg
  out.push_back(r.family);
  out.push_back(r.prefix.len);
  out.push_back(0);  // src_len
  out.push_back(0);  // tos
  out.push_back(static_cast<std::uint8_t>(r.table < 256 ? r.table : 252));  // RT_TABLE_COMPAT
  out.push_back(r.protocol);
  out.push_back(0);  // scope universe
  out.push_back(r.type);
  put32(out, 0);     // flags
  if (r.prefix.len > 0) attr_addr(out, 1, r.prefix.addr);  // RTA_DST
  attr_u32(out, 15, r.table);                               // RTA_TABLE
  if (r.priority) attr_u32(out, 6, r.priority);             // RTA_PRIORITY
  if (r.multipath || r.next_hop_count > 1) {
    const std::size_t mp = out.size();
    put16(out, 0);
    put16(out, 9);  // RTA_MULTIPATH
    for (std::uint8_t i = 0; i < r.next_hop_count; ++i) {
      const NextHop& nh = r.next_hops[i];
      const std::size_t rtnh = out.size();
      put16(out, 0);
      out.push_back(0);                                     // flags
      out.push_back(static_cast<std::uint8_t>(nh.weight ? nh.weight - 1 : 0));  // hops
      put32(out, nh.ifindex);
      if (nh.gateway) attr_addr(out, 5, nh.gateway);
      set16(out, rtnh, static_cast<std::uint16_t>(out.size() - rtnh));
    }
    set16(out, mp, static_cast<std::uint16_t>(out.size() - mp));
  } else if (r.next_hop_count == 1) {
    if (r.next_hops[0].gateway) attr_addr(out, 5, r.next_hops[0].gateway);
    if (r.next_hops[0].ifindex) attr_u32(out, 4, r.next_hops[0].ifindex);
  }
  set32(out, start, static_cast<std::uint32_t>(out.size() - start));
}

void append_frame(std::vector<std::uint8_t>& out, const std::vector<std::uint8_t>& netlink,
                  std::uint8_t version, std::uint8_t type) {
  const std::size_t len = netlink.size() + kHeaderSize;
  out.push_back(version);
  out.push_back(type);
  out.push_back(static_cast<std::uint8_t>(len >> 8));
  out.push_back(static_cast<std::uint8_t>(len));
  out.insert(out.end(), netlink.begin(), netlink.end());
}

RouteMessage make_bgp_route(const net::Ipv4Prefix& prefix, std::initializer_list<std::uint32_t> gateways,
                            bool is_delete) {
  RouteMessage r;
  r.is_delete = is_delete;
  r.family = 2;
  r.protocol = kRtprotBgp;
  r.type = 1;  // RTN_UNICAST
  r.table = kRtTableMain;
  r.priority = 20;
  r.prefix = prefix;
  for (std::uint32_t g : gateways) {
    if (r.next_hop_count < kMaxNextHops) r.next_hops[r.next_hop_count++] = NextHop{g, 2, 1};
  }
  return r;
}

}  // namespace vxfed::bgp::fpm
