// Builders of BMP messages (RFC 7854) as bgpd's BMP module sends them, for the parser's and the
// session's tests and the fuzzer's seed corpus: bytes written field by field, network order.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace vxfed::bgp::bmp::test {

using Buf = std::vector<std::uint8_t>;

inline void put16(Buf& b, std::uint32_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}
inline void put32(Buf& b, std::uint32_t v) {
  put16(b, v >> 16);
  put16(b, v & 0xffff);
}
inline void append(Buf& b, const Buf& more) { b.insert(b.end(), more.begin(), more.end()); }

// A whole BMP message: common header (version 3, length, type) + body.
inline Buf message(std::uint8_t type, const Buf& body, std::uint8_t version = 3) {
  Buf b{version};
  put32(b, static_cast<std::uint32_t>(6 + body.size()));
  b.push_back(type);
  append(b, body);
  return b;
}

constexpr std::uint8_t kPostPolicy = 0x40;

// The 42-byte per-peer header of an IPv4 peer.
inline Buf peer_header(std::uint32_t address, std::uint32_t asn = 65001, std::uint8_t flags = kPostPolicy,
                       std::uint64_t distinguisher = 0, std::uint8_t peer_type = 0) {
  Buf b{peer_type, flags};
  put32(b, static_cast<std::uint32_t>(distinguisher >> 32));
  put32(b, static_cast<std::uint32_t>(distinguisher));
  for (int i = 0; i < 12; ++i) b.push_back(0);
  put32(b, address);
  put32(b, asn);
  put32(b, address);  // BGP ID
  put32(b, 1700000000);
  put32(b, 0);
  return b;
}

// A BGP message: marker, length, type, body.
inline Buf bgp(std::uint8_t type, const Buf& body) {
  Buf b(16, 0xff);
  put16(b, static_cast<std::uint32_t>(19 + body.size()));
  b.push_back(type);
  append(b, body);
  return b;
}

inline Buf prefix(std::uint32_t addr, unsigned len) {
  Buf b{static_cast<std::uint8_t>(len)};
  for (unsigned i = 0; i < (len + 7) / 8; ++i) b.push_back(static_cast<std::uint8_t>(addr >> (24 - 8 * i)));
  return b;
}

inline Buf attribute(std::uint8_t type, const Buf& value, std::uint8_t flags = 0x40) {
  Buf b{flags, type};
  if (value.size() > 255) {
    b[0] = static_cast<std::uint8_t>(flags | 0x10);
    put16(b, static_cast<std::uint32_t>(value.size()));
  } else {
    b.push_back(static_cast<std::uint8_t>(value.size()));
  }
  append(b, value);
  return b;
}

inline Buf as_path(std::initializer_list<std::uint32_t> ases) {
  Buf v{2, static_cast<std::uint8_t>(ases.size())};
  for (auto as : ases) put32(v, as);
  return attribute(2, v);
}

inline Buf next_hop(std::uint32_t nh) {
  Buf v;
  put32(v, nh);
  return attribute(3, v);
}

// An UPDATE: withdrawn prefixes, attributes, NLRI.
inline Buf update(const std::vector<std::pair<std::uint32_t, unsigned>>& withdrawn, const Buf& attrs,
                  const std::vector<std::pair<std::uint32_t, unsigned>>& nlri) {
  Buf w, n;
  for (auto [a, l] : withdrawn) append(w, prefix(a, l));
  for (auto [a, l] : nlri) append(n, prefix(a, l));
  Buf body;
  put16(body, static_cast<std::uint32_t>(w.size()));
  append(body, w);
  put16(body, static_cast<std::uint32_t>(attrs.size()));
  append(body, attrs);
  append(body, n);
  return bgp(2, body);
}

// Route Monitoring of `peer` carrying `bgp_update`.
inline Buf route_monitoring(std::uint32_t peer, const Buf& bgp_update, std::uint8_t flags = kPostPolicy) {
  Buf body = peer_header(peer, 65001, flags);
  append(body, bgp_update);
  return message(0, body);
}

// One capability (code, length, value) and the Graceful Restart one (RFC 4724 / RFC 8538):
// R and N flags, a 12-bit restart time, one AFI/SAFI tuple per entry with its F bit.
inline Buf capability(std::uint8_t code, const Buf& value) {
  Buf b{code, static_cast<std::uint8_t>(value.size())};
  append(b, value);
  return b;
}
struct GrTuple {
  std::uint16_t afi = 1;
  std::uint8_t safi = 1;
  bool forwarding = false;
};
inline Buf graceful_restart(std::uint16_t restart_time, std::initializer_list<GrTuple> tuples = {GrTuple{}},
                            bool restart_state = false, bool notification = false) {
  Buf v;
  put16(v, (restart_state ? 0x8000u : 0u) | (notification ? 0x4000u : 0u) | (restart_time & 0x0fffu));
  for (const auto& t : tuples) {
    put16(v, t.afi);
    v.push_back(t.safi);
    v.push_back(t.forwarding ? 0x80 : 0);
  }
  return capability(64, v);
}
// Multiprotocol IPv4 unicast and 4-byte AS, as bgpd sends them.
inline Buf usual_capabilities() {
  Buf b = capability(1, {0, 1, 0, 1});
  append(b, capability(65, {0, 0, 0xfd, 0xe9}));
  return b;
}

// An OPEN whose optional parameters are one Capabilities parameter (type 2) per entry of
// `capabilities` (bgpd puts each capability in its own parameter), none when empty.
inline Buf open(std::uint32_t bgp_id, std::initializer_list<Buf> capabilities = {}) {
  Buf params;
  for (const auto& c : capabilities) {
    params.push_back(2);
    params.push_back(static_cast<std::uint8_t>(c.size()));
    append(params, c);
  }
  Buf v{4};
  put16(v, 65001);
  put16(v, 9);
  put32(v, bgp_id);
  v.push_back(static_cast<std::uint8_t>(params.size()));
  append(v, params);
  return bgp(1, v);
}

// Peer Up with the OPEN bgpd sent and the one it received (BGP messages, e.g. open()).
inline Buf peer_up(std::uint32_t peer, const Buf& sent_open, const Buf& received_open) {
  Buf body = peer_header(peer);
  for (int i = 0; i < 12; ++i) body.push_back(0);
  put32(body, 0x0a000001);  // local address
  put16(body, 179);
  put16(body, 40000);
  append(body, sent_open);
  append(body, received_open);
  return message(3, body);
}
inline Buf peer_up(std::uint32_t peer) { return peer_up(peer, open(0x0a000001), open(peer)); }

// Peer Down: the reason and its data as given (a NOTIFICATION for 1 and 3, an FSM event for 2).
inline Buf peer_down(std::uint32_t peer, std::uint8_t reason = 3, const Buf& data = {}) {
  Buf body = peer_header(peer);
  body.push_back(reason);
  append(body, data);
  return message(2, body);
}
inline Buf notification(std::uint8_t code, std::uint8_t subcode) { return bgp(3, {code, subcode}); }
inline Buf fsm_event(std::uint16_t event) {
  Buf b;
  put16(b, event);
  return b;
}

inline Buf initiation() {
  Buf body;
  put16(body, 2);  // sysName
  const std::string name = "node-a1";
  put16(body, static_cast<std::uint32_t>(name.size()));
  body.insert(body.end(), name.begin(), name.end());
  return message(4, body);
}

inline Buf statistics(std::uint32_t peer) {
  Buf body = peer_header(peer);
  put32(body, 1);
  put16(body, 7);  // routes in Adj-RIB-In
  put16(body, 8);
  put32(body, 0);
  put32(body, 42);
  return message(1, body);
}

}  // namespace vxfed::bgp::bmp::test
