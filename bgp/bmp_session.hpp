// One BMP session's byte stream turned into route events (no I/O: the station's socket code
// feeds it, tests and the fuzzer feed it bytes). It frames messages (bmp_parser.hpp), keeps
// which monitored peers are up, and hands the owner:
//   - peer_up / peer_down of a monitored BGP peer (a reflector, for a node; FRR 8.4 skips the
//     Peer Up of a session that came up after an OPEN collision: the peer's first
//     announcement then stands for it, see imply_peer_up()),
//   - each Route Monitoring's IPv4 unicast content (announced with a next hop, withdrawn,
//     End-of-RIB) for a peer that is up,
//   - a framing error, after which nothing more is read: the station closes the session and
//     bgpd reconnects and sends its table again.
// Everything refused is counted by reason (a message the RFC says to ignore, an IPv6 peer, an
// address family vxfed does not serve, a malformed message, a Peer Down or withdrawal for a peer
// never seen up); none of them changes a route.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bgp/bmp_parser.hpp"

namespace vxfed::bgp::bmp {

// A monitored peer: its address and its instance's distinguisher (a view's peers are told
// apart from another instance's).
struct PeerKey {
  std::uint64_t distinguisher = 0;
  net::Ipv4Addr address;
  auto operator<=>(const PeerKey&) const = default;
};

// Why a message changed nothing. One list: the enum, the counters and their names.
#define VXFED_BMP_IGNORED(X)                                                            \
  X(unknown_type)           /* a message type RFC 7854 does not define: ignored */    \
  X(route_mirroring)        /* not asked for */                                        \
  X(ipv6_peer)              /* a peer with an IPv6 address */                          \
  X(other_family)           /* MP_REACH/MP_UNREACH of another AFI/SAFI */              \
  X(pre_policy)             /* Adj-RIB-In before policy: vxfed reads post-policy */    \
  X(adj_rib_out)            /* RFC 8671 Adj-RIB-Out: not what the peer sent us */      \
  X(unknown_peer)           /* a withdrawal or Peer Down for a peer not up */          \
  X(malformed)              /* bounds or structure wrong: see last_malformed() */
enum class Ignored : std::uint8_t {
#define VXFED_BMP_ENUM(name) name,
  VXFED_BMP_IGNORED(VXFED_BMP_ENUM)
#undef VXFED_BMP_ENUM
      count_
};
const char* to_string(Ignored reason);

struct SessionCounters {
  std::array<std::uint64_t, static_cast<std::size_t>(MessageType::route_mirroring) + 1> messages{};
  std::array<std::uint64_t, static_cast<std::size_t>(Ignored::count_)> ignored{};
  std::uint64_t bytes = 0;
  std::uint64_t implied_peer_ups = 0;  // a peer's first announcement stood for its missing Peer Up
};

class Session {
 public:
  struct Handlers {
    // With both OPENs' Graceful Restart capabilities and the Peer Down's reason and
    // NOTIFICATION (bmp_rib.hpp decides from them whether bgpd keeps the peer's routes).
    std::function<void(const PeerKey&, const PeerHeader&, const PeerUp&)> peer_up;
    std::function<void(const PeerKey&, const PeerDown&)> peer_down;
    // The update's prefixes are valid during the call only.
    std::function<void(const PeerKey&, const Update&)> routes;
    std::function<void()> initiation;
    std::function<void()> termination;
  };
  explicit Session(Handlers handlers) : handlers_(std::move(handlers)) {}

  // Feeds bytes as they arrive; returns false once the stream cannot be read on (a framing
  // error: see framing_error()), after which feed() reads nothing more.
  bool feed(Bytes data);

  bool failed() const { return !framing_error_.empty(); }
  const std::string& framing_error() const { return framing_error_; }
  const char* last_malformed() const { return last_malformed_; }
  const SessionCounters& counters() const { return counters_; }
  // The peers now up, as this session has seen them.
  const std::map<PeerKey, PeerHeader>& peers_up() const { return peers_; }

 private:
  void handle(const Frame& frame);
  void imply_peer_up(const PeerKey& key, const PeerHeader& header);
  void ignore(Ignored reason) { ++counters_.ignored[static_cast<std::size_t>(reason)]; }
  void malformed(const Malformed& bad) {
    last_malformed_ = bad.why;
    ignore(Ignored::malformed);
  }

  Handlers handlers_;
  std::vector<std::uint8_t> pending_;  // bytes of a message not yet whole
  std::map<PeerKey, PeerHeader> peers_;
  Update update_;                      // reused: its vectors keep their capacity
  SessionCounters counters_;
  std::string framing_error_;
  const char* last_malformed_ = "";
};

}  // namespace vxfed::bgp::bmp
