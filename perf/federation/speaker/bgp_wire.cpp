#include "perf/federation/speaker/bgp_wire.hpp"

#include <algorithm>
#include <unordered_map>

namespace vxfed::perf::speaker {
namespace {

// Path attribute flags and type codes (RFC 4271 4.3, 5.1).
constexpr std::uint8_t kWellKnown = 0x40;   // transitive, well-known
constexpr std::uint8_t kAttrOrigin = 1, kAttrAsPath = 2, kAttrNextHop = 3, kAttrLocalPref = 5;
constexpr std::uint8_t kOriginIgp = 0;
constexpr std::uint8_t kAsSequence = 2;
constexpr std::uint32_t kLocalPref = 100;
// Capabilities (RFC 5492): optional parameter type 2.
constexpr std::uint8_t kParamCapabilities = 2;
constexpr std::uint8_t kCapMultiprotocol = 1, kCapRouteRefresh = 2, kCapFourByteAs = 65;

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}
void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v));
}
void set16(std::vector<std::uint8_t>& out, std::size_t at, std::size_t v) {
  out[at] = static_cast<std::uint8_t>(v >> 8);
  out[at + 1] = static_cast<std::uint8_t>(v);
}
std::uint16_t get16(Bytes b, std::size_t at) { return static_cast<std::uint16_t>(b[at] << 8 | b[at + 1]); }
std::uint32_t get32(Bytes b, std::size_t at) {
  return static_cast<std::uint32_t>(get16(b, at)) << 16 | get16(b, at + 2);
}

// Opens a message: marker and type; the length is set by finish().
std::size_t begin(std::vector<std::uint8_t>& out, MessageType type) {
  const std::size_t start = out.size();
  out.insert(out.end(), 16, 0xff);
  put16(out, 0);
  out.push_back(static_cast<std::uint8_t>(type));
  return start;
}
void finish(std::vector<std::uint8_t>& out, std::size_t start) { set16(out, start + 16, out.size() - start); }

// An NLRI entry: the length in bits, then only the bytes the length covers (RFC 4271 4.3).
std::size_t nlri_size(const net::Ipv4Prefix& p) { return 1 + (p.len + 7u) / 8u; }
void put_nlri(std::vector<std::uint8_t>& out, const net::Ipv4Prefix& p) {
  out.push_back(p.len);
  const std::uint32_t a = p.addr;
  for (unsigned i = 0; i < (p.len + 7u) / 8u; ++i) out.push_back(static_cast<std::uint8_t>(a >> (24 - 8 * i)));
}

// The path attributes of a route with this next hop.
std::vector<std::uint8_t> attributes(const UpdateParams& p, net::Ipv4Addr next_hop) {
  std::vector<std::uint8_t> a;
  a.insert(a.end(), {kWellKnown, kAttrOrigin, 1, kOriginIgp});
  if (p.ibgp) {
    a.insert(a.end(), {kWellKnown, kAttrAsPath, 0});  // iBGP: the path starts at the receiver
  } else {
    const std::uint8_t width = p.four_byte_as ? 4 : 2;
    a.insert(a.end(), {kWellKnown, kAttrAsPath, static_cast<std::uint8_t>(2 + width), kAsSequence, 1});
    if (p.four_byte_as) {
      put32(a, p.local_as);
    } else {
      put16(a, p.local_as > 0xffff ? kAsTrans : static_cast<std::uint16_t>(p.local_as));
    }
  }
  a.insert(a.end(), {kWellKnown, kAttrNextHop, 4});
  put32(a, next_hop.value);
  if (p.ibgp) {
    a.insert(a.end(), {kWellKnown, kAttrLocalPref, 4});
    put32(a, kLocalPref);
  }
  return a;
}

WireError error(ErrorCode code, std::uint8_t subcode, std::string why, std::vector<std::uint8_t> data = {}) {
  return WireError{code, subcode, std::move(why), std::move(data)};
}

}  // namespace

std::vector<std::uint8_t> encode_open(const OpenParams& p) {
  std::vector<std::uint8_t> caps;
  caps.insert(caps.end(), {kCapMultiprotocol, 4, 0, 1, 0, 1});  // AFI 1 (IPv4), reserved, SAFI 1
  if (p.route_refresh) caps.insert(caps.end(), {kCapRouteRefresh, 0});
  caps.insert(caps.end(), {kCapFourByteAs, 4});
  put32(caps, p.local_as);

  std::vector<std::uint8_t> out;
  const std::size_t start = begin(out, MessageType::open);
  out.push_back(4);  // version
  put16(out, p.local_as > 0xffff ? kAsTrans : static_cast<std::uint16_t>(p.local_as));
  put16(out, p.hold_s);
  put32(out, p.bgp_id.value);
  out.push_back(static_cast<std::uint8_t>(2 + caps.size()));  // optional parameters' length
  out.push_back(kParamCapabilities);
  out.push_back(static_cast<std::uint8_t>(caps.size()));
  out.insert(out.end(), caps.begin(), caps.end());
  finish(out, start);
  return out;
}

std::vector<std::uint8_t> encode_keepalive() {
  std::vector<std::uint8_t> out;
  finish(out, begin(out, MessageType::keepalive));
  return out;
}

std::vector<std::uint8_t> encode_notification(ErrorCode code, std::uint8_t subcode, Bytes data) {
  std::vector<std::uint8_t> out;
  const std::size_t start = begin(out, MessageType::notification);
  out.push_back(static_cast<std::uint8_t>(code));
  out.push_back(subcode);
  const std::size_t room = kMaxMessage - out.size();
  out.insert(out.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(std::min(room, data.size())));
  finish(out, start);
  return out;
}

std::size_t append_updates(const UpdateParams& p, std::span<const Route> routes, std::vector<std::uint8_t>& out) {
  // Next hops in the order they first appear, each with its prefixes in input order.
  std::vector<std::pair<net::Ipv4Addr, std::vector<net::Ipv4Prefix>>> groups;
  std::unordered_map<std::uint32_t, std::size_t> group_of;
  for (const Route& r : routes) {
    auto [it, fresh] = group_of.try_emplace(r.next_hop.value, groups.size());
    if (fresh) groups.push_back({r.next_hop, {}});
    groups[it->second].second.push_back(r.prefix);
  }
  std::size_t messages = 0;
  for (const auto& [next_hop, prefixes] : groups) {
    const std::vector<std::uint8_t> attrs = attributes(p, next_hop);
    std::size_t i = 0;
    while (i < prefixes.size()) {
      const std::size_t start = begin(out, MessageType::update);
      put16(out, 0);  // no withdrawn routes
      put16(out, attrs.size());
      out.insert(out.end(), attrs.begin(), attrs.end());
      do {
        put_nlri(out, prefixes[i]);
        ++i;
      } while (i < prefixes.size() && out.size() - start + nlri_size(prefixes[i]) <= kMaxMessage);
      finish(out, start);
      ++messages;
    }
  }
  return messages;
}

void append_withdrawal(std::span<const net::Ipv4Prefix> prefixes, std::vector<std::uint8_t>& out) {
  const std::size_t start = begin(out, MessageType::update);
  const std::size_t len_at = out.size();
  put16(out, 0);
  for (const auto& p : prefixes) put_nlri(out, p);
  set16(out, len_at, out.size() - len_at - 2);
  put16(out, 0);  // no path attributes
  finish(out, start);
}

void append_end_of_rib(std::vector<std::uint8_t>& out) {
  const std::size_t start = begin(out, MessageType::update);
  put16(out, 0);
  put16(out, 0);
  finish(out, start);
}

std::optional<Header> read_header(Bytes buf, std::size_t& need, WireError& err) {
  need = kHeaderSize;
  if (buf.size() < kHeaderSize) return std::nullopt;
  if (!std::all_of(buf.begin(), buf.begin() + 16, [](std::uint8_t b) { return b == 0xff; })) {
    err = error(ErrorCode::header, kHeaderNotSynchronized, "message header: marker is not all ones");
    return std::nullopt;
  }
  const std::uint16_t length = get16(buf, 16);
  const std::uint8_t type = buf[18];
  std::vector<std::uint8_t> length_data = {buf[16], buf[17]};
  if (length < kHeaderSize || length > kMaxMessage) {
    err = error(ErrorCode::header, kHeaderBadLength,
                "message header: length " + std::to_string(length) + " outside 19..4096", length_data);
    return std::nullopt;
  }
  if (type < 1 || type > 5) {
    err = error(ErrorCode::header, kHeaderBadType, "message header: unknown type " + std::to_string(type), {type});
    return std::nullopt;
  }
  const std::size_t min_len = type == 1 ? 29 : type == 2 ? 23 : type == 3 ? 21 : type == 5 ? 23 : 19;
  if (length < min_len || (type == 4 && length != 19)) {
    err = error(ErrorCode::header, kHeaderBadLength,
                "message header: length " + std::to_string(length) + " too short or wrong for type " +
                    std::to_string(type),
                length_data);
    return std::nullopt;
  }
  need = length;
  if (buf.size() < length) return std::nullopt;
  return Header{length, type};
}

std::optional<PeerOpen> parse_open(Bytes m, std::uint32_t expected_as, WireError& err) {
  PeerOpen o;
  o.version = m[19];
  const std::uint16_t my_as = get16(m, 20);
  o.hold_s = get16(m, 22);
  o.bgp_id = get32(m, 24);
  const std::size_t params_len = m[28];
  if (o.version != 4) {
    err = error(ErrorCode::open, kOpenUnsupportedVersion, "OPEN: version " + std::to_string(o.version) + ", not 4",
                {0, 4});
    return std::nullopt;
  }
  if (29 + params_len != m.size()) {
    err = error(ErrorCode::open, 0, "OPEN: optional parameters' length " + std::to_string(params_len) +
                                        " disagrees with the message length " + std::to_string(m.size()));
    return std::nullopt;
  }
  std::size_t off = 29;
  while (off < m.size()) {
    if (off + 2 > m.size() || off + 2 + m[off + 1] > m.size()) {
      err = error(ErrorCode::open, 0, "OPEN: an optional parameter runs past the message");
      return std::nullopt;
    }
    const std::uint8_t type = m[off];
    const std::size_t len = m[off + 1];
    const std::size_t end = off + 2 + len;
    if (type == kParamCapabilities) {
      std::size_t c = off + 2;
      while (c < end) {
        if (c + 2 > end || c + 2 + m[c + 1] > end) {
          err = error(ErrorCode::open, 0, "OPEN: a capability runs past its parameter");
          return std::nullopt;
        }
        const std::uint8_t code = m[c];
        const std::uint8_t clen = m[c + 1];
        if (code == kCapFourByteAs && clen == 4) {
          o.four_byte_as = true;
          o.asn = get32(m, c + 2);
        } else if (code == kCapMultiprotocol && clen == 4 && get16(m, c + 2) == 1 && m[c + 5] == 1) {
          o.ipv4_unicast = true;
        } else if (code == kCapRouteRefresh) {
          o.route_refresh = true;
        }
        c += 2 + clen;
      }
    }
    off = end;
  }
  if (!o.four_byte_as) o.asn = my_as;
  if (o.asn != expected_as) {
    std::vector<std::uint8_t> data = {m[20], m[21]};
    err = error(ErrorCode::open, kOpenBadPeerAs,
                "OPEN: peer AS " + std::to_string(o.asn) + ", expected " + std::to_string(expected_as), data);
    return std::nullopt;
  }
  if (o.hold_s == 1 || o.hold_s == 2) {
    err = error(ErrorCode::open, kOpenUnacceptableHold, "OPEN: hold time " + std::to_string(o.hold_s) + " s");
    return std::nullopt;
  }
  if (o.bgp_id == 0) {
    err = error(ErrorCode::open, kOpenBadBgpId, "OPEN: BGP identifier 0.0.0.0");
    return std::nullopt;
  }
  return o;
}

std::string describe_notification(Bytes m) {
  static const char* const kCodes[] = {"?", "Message Header Error", "OPEN Message Error", "UPDATE Message Error",
                                       "Hold Timer Expired", "Finite State Machine Error", "Cease"};
  if (m.size() < 21) return "a NOTIFICATION too short to carry a code";
  const std::uint8_t code = m[19];
  return std::string(code < 7 ? kCodes[code] : "unknown code") + " (" + std::to_string(code) + "/" +
         std::to_string(m[20]) + ")";
}

}  // namespace vxfed::perf::speaker
