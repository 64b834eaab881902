#include "bgp/bmp_session.hpp"

#include <string>

namespace vxfed::bgp::bmp {

const char* to_string(Ignored reason) {
  switch (reason) {
#define VXFED_BMP_NAME(name) \
  case Ignored::name:        \
    return #name;
    VXFED_BMP_IGNORED(VXFED_BMP_NAME)
#undef VXFED_BMP_NAME
    case Ignored::count_:
      break;
  }
  return "unknown";
}

bool Session::feed(Bytes data) {
  if (failed()) return false;
  counters_.bytes += data.size();
  // Whole messages are read straight from `data`; only a message cut by the read boundary is
  // copied, into pending_, until it is whole.
  Bytes rest = data;
  if (!pending_.empty()) {
    pending_.insert(pending_.end(), data.begin(), data.end());
    rest = Bytes(pending_);
  }
  std::size_t used = 0;
  while (true) {
    Frame frame;
    const auto st = parse_frame(rest.subspan(used), frame);
    if (st == FrameStatus::need_more) break;
    if (st != FrameStatus::ok) {
      framing_error_ = std::string(to_string(st)) + " (version " + std::to_string(frame.version) + ", length " +
                       std::to_string(frame.length) + ")";
      pending_.clear();
      return false;
    }
    handle(frame);
    used += frame.length;
  }
  std::vector<std::uint8_t> left(rest.begin() + static_cast<std::ptrdiff_t>(used), rest.end());
  pending_ = std::move(left);
  return true;
}

// FRR 8.4 sends no Peer Up for a session that came up after an OPEN collision (both sides
// dialled; bgpd logs "bmp: missing RX OPEN message for peer X": the OPEN it keeps for the Peer
// Up stayed with the connection it closed) but monitors that peer's routes all the same.
// Ignoring them, a node never learned what such a peer sent (test_bgp_bfd, two nodes peering
// directly). The first announcement of a peer not up stands for its Peer Up, without the OPENs:
// with no Graceful Restart capability known, its Peer Down withdraws its routes at once.
void Session::imply_peer_up(const PeerKey& key, const PeerHeader& header) {
  ++counters_.implied_peer_ups;
  peers_[key] = header;
  if (handlers_.peer_up) handlers_.peer_up(key, header, PeerUp{});
}

void Session::handle(const Frame& frame) {
  if (frame.type > static_cast<std::uint8_t>(MessageType::route_mirroring)) return ignore(Ignored::unknown_type);
  const auto type = static_cast<MessageType>(frame.type);
  ++counters_.messages[frame.type];
  Malformed bad;
  switch (type) {
    case MessageType::initiation:
    case MessageType::termination: {
      std::size_t tlvs = 0;
      if (!tlvs_ok(frame.body, tlvs, bad)) return malformed(bad);
      if (type == MessageType::initiation && handlers_.initiation) handlers_.initiation();
      if (type == MessageType::termination && handlers_.termination) handlers_.termination();
      return;
    }
    case MessageType::route_mirroring:
      return ignore(Ignored::route_mirroring);
    default:
      break;
  }
  const auto header = parse_peer_header(frame.body, bad);
  if (!header) return malformed(bad);
  const Bytes after = frame.body.subspan(kPerPeerHeaderSize);
  if (header->ipv6) return ignore(Ignored::ipv6_peer);
  const PeerKey key{header->distinguisher, header->address};
  switch (type) {
    case MessageType::peer_up: {
      PeerUp up;
      if (!parse_peer_up(after, up, bad)) return malformed(bad);
      peers_[key] = *header;
      if (handlers_.peer_up) handlers_.peer_up(key, *header, up);
      return;
    }
    case MessageType::peer_down: {
      PeerDown down;
      if (!parse_peer_down(after, down, bad)) return malformed(bad);
      if (peers_.erase(key) == 0) return ignore(Ignored::unknown_peer);
      if (handlers_.peer_down) handlers_.peer_down(key, down);
      return;
    }
    case MessageType::statistics_report: {
      std::uint32_t count = 0;
      if (!parse_statistics(after, count, bad)) return malformed(bad);
      return;
    }
    case MessageType::route_monitoring: {
      if (!parse_update(after, header->two_byte_as_path, update_, bad)) return malformed(bad);
      if (header->adj_rib_out) return ignore(Ignored::adj_rib_out);
      if (!header->post_policy) return ignore(Ignored::pre_policy);
      if (update_.other_family && update_.announced.empty() && update_.withdrawn.empty())
        return ignore(Ignored::other_family);
      if (!peers_.count(key)) {
        if (update_.announced.empty()) return ignore(Ignored::unknown_peer);
        imply_peer_up(key, *header);
      }
      if (handlers_.routes) handlers_.routes(key, update_);
      return;
    }
    default:
      return;
  }
}

}  // namespace vxfed::bgp::bmp
