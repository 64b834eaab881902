#include "bgp/reflector_render.hpp"

#include "bgp/frr_render.hpp"  // maximum_prefix_clause

#include <sstream>

namespace vxfed::bgp {
namespace {

constexpr const char* kNodes = "vxfed-nodes";            // peer group of this cluster's nodes
constexpr const char* kCluster = "vxfed-cluster";        // prefix list: blocks of this cluster
constexpr const char* kFromNodes = "vxfed-from-nodes";
constexpr const char* kToNodes = "vxfed-to-nodes";
constexpr const char* kToReflectors = "vxfed-to-reflectors";
constexpr const char* kNoFib = "vxfed-no-fib";
constexpr int kUpdateDelayS = 60;    // update-delay: read-only at most this long after a restart
constexpr int kEstablishWaitS = 15;  // ... waiting this long for reflectors that are not up

std::string from_peer(const PeerConfig& p) { return "vxfed-in-" + p.address.str(); }

std::string any_length(const net::Ipv4Prefix& p) {
  return p.len < 32 ? p.str() + " le 32" : p.str();
}

void timers(std::ostream& o, const std::string& n, std::uint32_t keepalive, std::uint32_t hold) {
  o << n << " timers " << keepalive << " " << hold << "\n";
}

}  // namespace

std::string render_reflector_config(const BgpConfig& c) {
  const ReflectorNodes& nodes = c.nodes;
  std::ostringstream o;
  o << "! Rendered by vxfed-reflector (bgp/reflector_render.cpp). Do not edit: it is overwritten.\n"
    << "frr defaults traditional\n"
    << "!\n";
  int seq = 5;
  for (const auto& cidr : nodes.cidrs) {
    o << "ip prefix-list " << kCluster << " seq " << seq << " permit " << any_length(cidr) << "\n";
    seq += 5;
  }
  for (const auto& peer : c.peers) {
    seq = 5;
    for (const auto& m : peer.accept) {
      o << "ip prefix-list " << from_peer(peer) << " seq " << seq << " permit " << m.str() << "\n";
      seq += 5;
    }
  }
  o << "!\n"
    << "route-map " << kFromNodes << " permit 10\n"
    << " match ip address prefix-list " << kCluster << "\n"
    << "exit\n"
    << "!\n"
    << "route-map " << kToNodes << " permit 10\n"
    << "exit\n"
    << "!\n"
    << "route-map " << kToReflectors << " permit 10\n"
    << " match ip address prefix-list " << kCluster << "\n"
    << "exit\n"
    << "!\n";
  for (const auto& peer : c.peers) {
    o << "route-map " << from_peer(peer) << " permit 10\n"
      << " match ip address prefix-list " << from_peer(peer) << "\n"
      << "exit\n"
      << "!\n";
  }
  if (!c.view) {
    o << "route-map " << kNoFib << " deny 10\n"
      << "exit\n"
      << "!\n";
  }

  // As a view bgpd tracks no next hop (at 130,000 VTEPs as next hops zebra's next-hop tracking
  // never finishes: docs/federation.md, "Scale") and installs nothing, so no table-map.
  o << "router bgp " << c.asn << (c.view ? std::string(" view ") + kBgpViewName : std::string()) << "\n"
    << " bgp router-id " << c.router_id.str() << "\n";
  // A restarted reflector (FRR 8.4) ends its graceful-restart route selection deferral at the
  // End-of-RIB of the peers already up, then sends End-of-RIB to them. Its nodes dial it back
  // within a second; the other reflector is held until the config has settled (FRR's
  // config-pending hold, up to the route-map delay timer: ~3 s later). The nodes thus got an
  // End-of-RIB without the other clusters' routes and swept their stale copies (issue 37, item
  // 4; docs/faults.md, "A route reflector killed"). update-delay keeps bgpd read-only (nothing
  // sent, End-of-RIB included) until every configured peer, i.e. every other reflector, is up
  // and each session up has sent its first keepalive or End-of-RIB; the deferral then holds
  // the End-of-RIB until the other reflector's End-of-RIB. At most kEstablishWaitS for
  // reflectors that do not come (this cluster's own reflection waits that long after a
  // restart, or at a first start), kUpdateDelayS in all; once per bgpd.
  if (c.graceful_restart) o << " update-delay " << kUpdateDelayS << " " << kEstablishWaitS << "\n";
  if (c.graceful_restart) {
    o << " bgp graceful-restart\n"
      << " bgp graceful-restart preserve-fw-state\n";
    if (c.restart_time_s != 120) o << " bgp graceful-restart restart-time " << c.restart_time_s << "\n";
  }
  const std::string g = std::string(" neighbor ") + kNodes;
  o << g << " peer-group\n"
    << g << " remote-as " << c.asn << "\n"
    << g << " description vxfed nodes of this cluster\n";
  if (!nodes.password.empty()) o << g << " password " << nodes.password.reveal() << "\n";
  if (nodes.bfd) o << g << " bfd\n";
  timers(o, g, nodes.keepalive_s, nodes.hold_s);
  for (const auto& peer : c.peers) {
    const std::string n = " neighbor " + peer.address.str();
    o << n << " remote-as " << peer.remote_asn << "\n"
      << n << " description vxfed reflector of cluster " << peer.cluster << "\n";
    if (!peer.password.empty()) o << n << " password " << peer.password.reveal() << "\n";
    if (peer.ebgp_multihop) o << n << " ebgp-multihop " << peer.ebgp_multihop << "\n";
    if (!peer.update_source.empty()) o << n << " update-source " << peer.update_source << "\n";
    if (peer.bfd) o << n << " bfd\n";
    // BFD must not end a graceful restart between reflectors. A restarted reflector's bgpd
    // installs the session's BFD again once the session is up (source and interface are known
    // only then); bfdd reports that as a down of a session it had brought up while the peer was
    // held for the config, and bgpd sent a Hard Reset: the other reflector flushed every route
    // of this cluster at once. With the C bit checked, a down that does not say the peer's BFD
    // is independent of its control plane is ignored while graceful restart is negotiated.
    if (peer.bfd && c.graceful_restart && peer.graceful_restart)
      o << n << " bfd check-control-plane-failure\n";
    if (peer.graceful_restart && !c.graceful_restart) o << n << " graceful-restart\n";
    if (!peer.graceful_restart && c.graceful_restart) o << n << " graceful-restart-disable\n";
    // A withdrawn block must reach the other cluster at once (traditional eBGP default: 30 s).
    o << n << " advertisement-interval 0\n";
    timers(o, n, peer.keepalive_s, peer.hold_s);
    o << n << " timers connect " << peer.connect_retry_s << "\n";
  }
  if (nodes.listen_limit != 100) o << " bgp listen limit " << nodes.listen_limit << "\n";
  o << " bgp listen range " << nodes.listen_range.str() << " peer-group " << kNodes << "\n"
    << " !\n"
    << " address-family ipv4 unicast\n";
  if (!c.view) o << "  table-map " << kNoFib << "\n";
  o << "  neighbor " << kNodes << " route-reflector-client\n"
    << "  neighbor " << kNodes << " route-map " << kFromNodes << " in\n"
    << "  neighbor " << kNodes << " route-map " << kToNodes << " out\n"
    << "  neighbor " << kNodes << " " << maximum_prefix_clause(nodes.max_prefix, nodes.max_prefix_restart_min, false)
    << "\n";
  for (const auto& peer : c.peers) {
    const std::string n = "  neighbor " + peer.address.str();
    o << n << " attribute-unchanged next-hop\n"
      << n << " route-map " << from_peer(peer) << " in\n"
      << n << " route-map " << kToReflectors << " out\n"
      << n << " " << maximum_prefix_clause(peer.max_prefix, peer.max_prefix_restart_min, peer.max_prefix_warning_only)
      << "\n";
  }
  o << " exit-address-family\n"
    << "exit\n"
    << "!\n";
  return o.str();
}

}  // namespace vxfed::bgp
