#include "bgp/bmp_parser.hpp"

#include "bgp/gbp_mark.hpp"

namespace vxfed::bgp::bmp {

namespace {

std::uint16_t be16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
std::uint32_t be32(const std::uint8_t* p) { return std::uint32_t{be16(p)} << 16 | be16(p + 2); }

bool fail(Malformed& bad, const char* why) {
  bad.why = why;
  return false;
}

constexpr std::size_t kBgpHeaderSize = 19;  // marker 16 | length 2 | type 1
constexpr std::uint8_t kBgpOpen = 1;
constexpr std::uint8_t kBgpUpdate = 2;
constexpr std::uint16_t kAfiIpv4 = 1;
constexpr std::uint8_t kSafiUnicast = 1;

// Path attribute types vxfed reads; every other is length-checked and skipped.
constexpr std::uint8_t kAttrAsPath = 2;
constexpr std::uint8_t kAttrNextHop = 3;
constexpr std::uint8_t kAttrMpReach = 14;
constexpr std::uint8_t kAttrMpUnreach = 15;
constexpr std::uint8_t kAttrLargeCommunity = 32;  // RFC 8092
constexpr std::uint8_t kAttrFlagExtendedLength = 0x10;

// A whole BGP message of `type` at the start of `b`: the marker all ones, the length field
// equal to what is there (exact: true) or at most it; its length on success.
std::optional<std::size_t> bgp_message(Bytes b, std::uint8_t type, bool exact, Malformed& bad) {
  if (b.size() < kBgpHeaderSize) return fail(bad, "BGP message shorter than its header"), std::nullopt;
  for (std::size_t i = 0; i < 16; ++i)
    if (b[i] != 0xff) return fail(bad, "BGP marker not all ones"), std::nullopt;
  const std::size_t length = be16(b.data() + 16);
  if (length < kBgpHeaderSize || length > b.size() || (exact && length != b.size()))
    return fail(bad, "BGP message length disagrees with the BMP message"), std::nullopt;
  if (b[18] != type) return fail(bad, type == kBgpUpdate ? "BGP message is not an UPDATE" : "BGP message is not an OPEN"), std::nullopt;
  return length;
}

// IPv4 prefixes in BGP's encoding (length in bits, then the fewest bytes that hold it), all of
// `b`, appended to `out`.
bool parse_prefixes(Bytes b, std::vector<net::Ipv4Prefix>& out, Malformed& bad) {
  std::size_t i = 0;
  while (i < b.size()) {
    const unsigned len = b[i++];
    if (len > 32) return fail(bad, "IPv4 prefix longer than 32 bits");
    const std::size_t bytes = (len + 7) / 8;
    if (bytes > b.size() - i) return fail(bad, "IPv4 prefix runs past its field");
    std::uint32_t addr = 0;
    for (std::size_t k = 0; k < bytes; ++k) addr |= std::uint32_t{b[i + k]} << (24 - 8 * k);
    i += bytes;
    out.push_back(net::Ipv4Prefix::make(addr, len));
  }
  return true;
}

// AS_PATH: segments of type (1 AS_SET, 2 AS_SEQUENCE, 3/4 confederation), count, count ASes
// of `width` bytes; they must fill the attribute exactly.
bool parse_as_path(Bytes b, std::size_t width, Update& out, Malformed& bad) {
  std::size_t i = 0;
  while (i < b.size()) {
    if (b.size() - i < 2) return fail(bad, "AS_PATH segment header cut short");
    const std::uint8_t type = b[i];
    const std::size_t count = b[i + 1];
    i += 2;
    if (type < 1 || type > 4) return fail(bad, "AS_PATH segment of unknown type");
    if (count == 0) return fail(bad, "AS_PATH segment with no AS");
    if (count * width > b.size() - i) return fail(bad, "AS_PATH segment runs past the attribute");
    const std::uint8_t* last = b.data() + i + (count - 1) * width;
    out.origin_as = width == 4 ? be32(last) : be16(last);
    out.as_path_length = static_cast<std::uint16_t>(out.as_path_length + (type == 2 ? count : type == 1 ? 1 : 0));
    i += count * width;
  }
  return true;
}

// LARGE_COMMUNITY: 12-byte values (global administrator, local data 1, local data 2); whether
// the GBP mark is among them.
bool parse_large_communities(Bytes b, Update& out, Malformed& bad) {
  if (b.size() % 12 != 0) return fail(bad, "LARGE_COMMUNITY length is not a multiple of 12");
  for (std::size_t i = 0; i < b.size(); i += 12) {
    const LargeCommunity c{be32(b.data() + i), be32(b.data() + i + 4), be32(b.data() + i + 8)};
    if (c == kGbpMark) out.gbp_mark = true;
  }
  return true;
}

bool parse_mp_reach(Bytes b, Update& out, Malformed& bad) {
  if (b.size() < 5) return fail(bad, "MP_REACH_NLRI shorter than its fixed part");
  const std::uint16_t afi = be16(b.data());
  const std::uint8_t safi = b[2];
  const std::size_t nh_len = b[3];
  if (nh_len > b.size() - 4 - 1) return fail(bad, "MP_REACH_NLRI next hop runs past the attribute");
  if (afi != kAfiIpv4 || safi != kSafiUnicast) {
    out.other_family = true;
    return true;
  }
  if (nh_len != 4) return fail(bad, "MP_REACH_NLRI IPv4 next hop is not 4 bytes");
  out.next_hop = net::Ipv4Addr{be32(b.data() + 4)};
  // One reserved byte, then the NLRI.
  return parse_prefixes(b.subspan(4 + nh_len + 1), out.announced, bad);
}

bool parse_mp_unreach(Bytes b, Update& out, Malformed& bad, bool& ipv4_unicast_eor) {
  if (b.size() < 3) return fail(bad, "MP_UNREACH_NLRI shorter than its fixed part");
  if (be16(b.data()) != kAfiIpv4 || b[2] != kSafiUnicast) {
    out.other_family = true;
    return true;
  }
  ipv4_unicast_eor = b.size() == 3;
  return parse_prefixes(b.subspan(3), out.withdrawn, bad);
}

}  // namespace

const char* to_string(MessageType t) {
  switch (t) {
    case MessageType::route_monitoring: return "route_monitoring";
    case MessageType::statistics_report: return "statistics_report";
    case MessageType::peer_down: return "peer_down";
    case MessageType::peer_up: return "peer_up";
    case MessageType::initiation: return "initiation";
    case MessageType::termination: return "termination";
    case MessageType::route_mirroring: return "route_mirroring";
  }
  return "unknown";
}

const char* to_string(FrameStatus s) {
  switch (s) {
    case FrameStatus::ok: return "ok";
    case FrameStatus::need_more: return "need_more";
    case FrameStatus::bad_version: return "bad_version";
    case FrameStatus::bad_length: return "bad_length";
  }
  return "unknown";
}

FrameStatus parse_frame(Bytes buf, Frame& out) {
  if (buf.size() < kCommonHeaderSize) return FrameStatus::need_more;
  out.version = buf[0];
  out.length = be32(buf.data() + 1);
  out.type = buf[5];
  if (out.version != kVersion) return FrameStatus::bad_version;
  if (out.length < kCommonHeaderSize || out.length > kMaxMessage) return FrameStatus::bad_length;
  if (buf.size() < out.length) return FrameStatus::need_more;
  out.body = buf.subspan(kCommonHeaderSize, out.length - kCommonHeaderSize);
  return FrameStatus::ok;
}

std::optional<PeerHeader> parse_peer_header(Bytes body, Malformed& bad) {
  if (body.size() < kPerPeerHeaderSize) return fail(bad, "per-peer header cut short"), std::nullopt;
  PeerHeader h;
  h.peer_type = body[0];
  h.flags = body[1];
  h.ipv6 = (h.flags & 0x80) != 0;
  h.post_policy = (h.flags & 0x40) != 0;
  h.two_byte_as_path = (h.flags & 0x20) != 0;
  h.adj_rib_out = (h.flags & 0x10) != 0;
  h.distinguisher = std::uint64_t{be32(body.data() + 2)} << 32 | be32(body.data() + 6);
  if (!h.ipv6) h.address = net::Ipv4Addr{be32(body.data() + 10 + 12)};
  h.asn = be32(body.data() + 26);
  h.bgp_id = be32(body.data() + 30);
  return h;
}

bool parse_update(Bytes msg, bool two_byte_as_path, Update& out, Malformed& bad) {
  out.clear();
  if (!bgp_message(msg, kBgpUpdate, true, bad)) return false;
  Bytes rest = msg.subspan(kBgpHeaderSize);
  if (rest.size() < 2) return fail(bad, "UPDATE without a withdrawn-routes length");
  const std::size_t withdrawn_len = be16(rest.data());
  if (withdrawn_len > rest.size() - 2) return fail(bad, "UPDATE withdrawn routes run past the message");
  if (!parse_prefixes(rest.subspan(2, withdrawn_len), out.withdrawn, bad)) return false;
  rest = rest.subspan(2 + withdrawn_len);
  if (rest.size() < 2) return fail(bad, "UPDATE without a path-attributes length");
  const std::size_t attrs_len = be16(rest.data());
  if (attrs_len > rest.size() - 2) return fail(bad, "UPDATE path attributes run past the message");
  Bytes attrs = rest.subspan(2, attrs_len);
  const Bytes nlri = rest.subspan(2 + attrs_len);

  bool mp_unreach_eor = false, saw_mp_unreach = false;
  std::size_t attr_count = 0;
  while (!attrs.empty()) {
    if (attrs.size() < 3) return fail(bad, "path attribute header cut short");
    const std::uint8_t flags = attrs[0], type = attrs[1];
    const bool extended = (flags & kAttrFlagExtendedLength) != 0;
    const std::size_t header = extended ? 4 : 3;
    if (attrs.size() < header) return fail(bad, "path attribute header cut short");
    const std::size_t len = extended ? be16(attrs.data() + 2) : attrs[2];
    if (len > attrs.size() - header) return fail(bad, "path attribute runs past the attributes");
    const Bytes value = attrs.subspan(header, len);
    switch (type) {
      case kAttrAsPath:
        if (!parse_as_path(value, two_byte_as_path ? 2 : 4, out, bad)) return false;
        break;
      case kAttrNextHop:
        if (len != 4) return fail(bad, "NEXT_HOP is not 4 bytes");
        out.next_hop = net::Ipv4Addr{be32(value.data())};
        break;
      case kAttrMpReach:
        if (!parse_mp_reach(value, out, bad)) return false;
        break;
      case kAttrLargeCommunity:
        if (!parse_large_communities(value, out, bad)) return false;
        break;
      case kAttrMpUnreach:
        saw_mp_unreach = true;
        if (!parse_mp_unreach(value, out, bad, mp_unreach_eor)) return false;
        break;
      default:
        break;
    }
    ++attr_count;
    attrs = attrs.subspan(header + len);
  }
  if (!parse_prefixes(nlri, out.announced, bad)) return false;
  if (!out.announced.empty() && !out.next_hop) return fail(bad, "announced prefixes without a next hop");
  // End-of-RIB for IPv4 unicast: an UPDATE with nothing in it, or (RFC 4724) one whose only
  // attribute is an empty MP_UNREACH_NLRI of AFI 1 / SAFI 1.
  out.end_of_rib = out.announced.empty() && out.withdrawn.empty() &&
                   ((attr_count == 0 && !saw_mp_unreach) || (attr_count == 1 && mp_unreach_eor));
  return true;
}

namespace {

constexpr std::uint8_t kCapGracefulRestart = 64;

// One capability (code 64 read, the others skipped).
bool read_capabilities(Bytes caps, GracefulRestartCap& gr, Malformed& bad) {
  while (!caps.empty()) {
    if (caps.size() < 2) return fail(bad, "OPEN capability cut short");
    const std::uint8_t code = caps[0];
    const std::size_t len = caps[1];
    if (len > caps.size() - 2) return fail(bad, "OPEN capability runs past its parameter");
    const Bytes value = caps.subspan(2, len);
    if (code == kCapGracefulRestart) {
      if (len < 2 || (len - 2) % 4 != 0) return fail(bad, "Graceful Restart capability of a wrong length");
      gr = GracefulRestartCap{};
      gr.present = true;
      const std::uint16_t head = be16(value.data());
      gr.restart_state = (head & 0x8000) != 0;
      gr.notification = (head & 0x4000) != 0;
      gr.restart_time_s = head & 0x0fff;
      for (std::size_t i = 2; i + 4 <= len; i += 4) {
        if (be16(value.data() + i) == kAfiIpv4 && value[i + 2] == kSafiUnicast) {
          gr.ipv4_unicast = true;
          gr.ipv4_unicast_forwarding = (value[i + 3] & 0x80) != 0;
        }
      }
    }
    caps = caps.subspan(2 + len);
  }
  return true;
}

// An OPEN's optional parameters (after its 10-byte fixed part), RFC 9072's extended form too.
bool read_open_parameters(Bytes open_body, GracefulRestartCap& gr, Malformed& bad) {
  std::size_t params_len = open_body[9];
  Bytes params = open_body.subspan(10);
  bool extended = false;
  if (params_len == 255 && !params.empty() && params[0] == 255) {
    if (params.size() < 3) return fail(bad, "OPEN extended parameters cut short");
    extended = true;
    params_len = be16(params.data() + 1);
    params = params.subspan(3);
  }
  if (params_len != params.size()) return fail(bad, "OPEN parameters disagree with its length");
  while (!params.empty()) {
    const std::size_t head = extended ? 3 : 2;
    if (params.size() < head) return fail(bad, "OPEN parameter cut short");
    const std::uint8_t type = params[0];
    const std::size_t len = extended ? be16(params.data() + 1) : params[1];
    if (len > params.size() - head) return fail(bad, "OPEN parameter runs past the OPEN");
    if (type == 2 && !read_capabilities(params.subspan(head, len), gr, bad)) return false;
    params = params.subspan(head + len);
  }
  return true;
}

}  // namespace

bool parse_peer_up(Bytes b, PeerUp& out, Malformed& bad) {
  if (b.size() < 20) return fail(bad, "Peer Up shorter than its fixed part");
  out.local_port = be16(b.data() + 16);
  out.remote_port = be16(b.data() + 18);
  Bytes rest = b.subspan(20);
  struct Side {
    std::uint32_t* id;
    GracefulRestartCap* gr;
  };
  for (const Side side : {Side{&out.sent_bgp_id, &out.sent_gr}, Side{&out.received_bgp_id, &out.received_gr}}) {
    const auto len = bgp_message(rest, kBgpOpen, false, bad);
    if (!len) return false;
    // OPEN: version 1 | my AS 2 | hold time 2 | BGP identifier 4 | parameters length 1 | ...
    if (*len < kBgpHeaderSize + 10) return fail(bad, "OPEN shorter than its fixed part");
    *side.id = be32(rest.data() + kBgpHeaderSize + 5);
    // Parameters that do not add up leave the Peer Up valid (the session is up whatever bgpd
    // copied) but without Graceful Restart: a peer down then withdraws at once.
    Malformed caps_bad;
    if (!read_open_parameters(rest.subspan(kBgpHeaderSize, *len - kBgpHeaderSize), *side.gr, caps_bad)) {
      *side.gr = GracefulRestartCap{};
      out.capabilities_malformed = caps_bad.why;
    }
    rest = rest.subspan(*len);
  }
  std::size_t tlvs = 0;
  return tlvs_ok(rest, tlvs, bad);
}

bool parse_peer_down(Bytes b, PeerDown& out, Malformed& bad) {
  out = PeerDown{};
  if (b.empty()) return fail(bad, "Peer Down without a reason");
  out.reason = b[0];
  if (out.reason < 1 || out.reason > 7) return fail(bad, "Peer Down reason unknown");
  const Bytes data = b.subspan(1);
  if (out.reason == kPeerDownLocalNotify || out.reason == kPeerDownRemoteNotify) {
    // A BGP NOTIFICATION: header | code | subcode | data. Kept only when whole: the reason
    // alone still says a NOTIFICATION ended the session.
    Malformed ignored;
    if (const auto len = bgp_message(data, 3, false, ignored); len && *len >= kBgpHeaderSize + 2) {
      out.notify_code = data[kBgpHeaderSize];
      out.notify_subcode = data[kBgpHeaderSize + 1];
    }
  } else if (out.reason == kPeerDownLocalNoNotify && data.size() >= 2) {
    out.fsm_event = be16(data.data());
  }
  return true;
}

bool tlvs_ok(Bytes b, std::size_t& count, Malformed& bad) {
  count = 0;
  while (!b.empty()) {
    if (b.size() < 4) return fail(bad, "TLV header cut short");
    const std::size_t len = be16(b.data() + 2);
    if (len > b.size() - 4) return fail(bad, "TLV runs past the message");
    b = b.subspan(4 + len);
    ++count;
  }
  return true;
}

bool parse_statistics(Bytes b, std::uint32_t& count, Malformed& bad) {
  if (b.size() < 4) return fail(bad, "Statistics Report without a count");
  count = be32(b.data());
  std::size_t seen = 0;
  if (!tlvs_ok(b.subspan(4), seen, bad)) return false;
  if (seen != count) return fail(bad, "Statistics Report count disagrees with its TLVs");
  return true;
}

}  // namespace vxfed::bgp::bmp
