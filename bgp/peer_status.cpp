#include "bgp/peer_status.hpp"

#include "bgp/frr_render.hpp"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <sstream>

namespace vxfed::bgp {

std::vector<std::string> peer_status_commands(const BgpConfig& config) {
  // `show route-map` is an enable-node command (a vty socket starts in the view node).
  // With the BMP feed bgpd's instance is a view: `show bgp` alone would ask the default one.
  const std::string bgp = "bgp" + bgp_instance_suffix(config);
  std::vector<std::string> commands{"show " + bgp + " neighbors json", "enable", "show route-map json"};
  for (const auto& p : config.peers) {
    commands.push_back("show " + bgp + " ipv4 unicast neighbors " + p.address.str() + " prefix-counts json");
  }
  return commands;
}

std::vector<PeerStatus> parse_peer_status(const BgpConfig& config, const std::string& output) {
  using nlohmann::json;
  std::vector<PeerStatus> out;
  for (const auto& p : config.peers) {
    PeerStatus s;
    s.address = p.address.str();
    s.remote_asn = p.remote_asn;
    s.ibgp = p.reflector;
    s.cluster = p.reflector ? config.local_cluster : p.cluster;
    out.push_back(s);
  }
  // Several JSON documents one after another; text that is not JSON (an error for a peer
  // that is not up) is skipped to the next '{'.
  std::size_t pos = 0;
  while ((pos = output.find('{', pos)) != std::string::npos) {
    json doc;
    std::size_t end = pos;
    // Find the matching closing brace (strings in FRR's JSON carry no braces we care about,
    // but be exact: track strings).
    int depth = 0;
    bool in_str = false, esc = false;
    for (; end < output.size(); ++end) {
      char c = output[end];
      if (in_str) {
        if (esc) esc = false;
        else if (c == '\\') esc = true;
        else if (c == '"') in_str = false;
        continue;
      }
      if (c == '"') in_str = true;
      else if (c == '{') ++depth;
      else if (c == '}' && --depth == 0) break;
    }
    if (end >= output.size()) break;
    doc = json::parse(output.begin() + static_cast<long>(pos), output.begin() + static_cast<long>(end) + 1,
                      nullptr, false);
    pos = end + 1;
    if (doc.is_discarded() || !doc.is_object()) continue;
    if (doc.contains("BGP") && doc["BGP"].is_object()) {  // show route-map json, bgpd's part
      const json& maps = doc["BGP"];
      for (std::size_t i = 0; i < out.size(); ++i) {
        auto m = maps.find(inbound_route_map_name(config.peers[i]));
        if (m == maps.end() || !m->is_object()) continue;
        // Every route the map looked at that no permit rule took hit its implicit deny.
        std::uint64_t permitted = 0;
        for (const auto& rule : m->value("rules", json::array()))
          if (rule.is_object() && rule.value("type", "") == "permit") permitted += rule.value("invoked", std::uint64_t{0});
        const std::uint64_t invoked = m->value("invoked", std::uint64_t{0});
        out[i].prefixes_denied = invoked > permitted ? invoked - permitted : 0;
      }
      continue;
    }
    if (doc.contains("prefixCountsFor")) {
      std::string addr = doc.value("prefixCountsFor", "");
      for (auto& s : out) {
        if (s.address != addr) continue;
        const auto& w = doc.value("ribTableWalkCounters", json::object());
        // Adj-in counts pre-policy routes only with soft-reconfiguration inbound, which
        // vxfed does not enable (it disables max-prefix in FRR 8.4): see below.
        s.prefixes_received = std::max(s.prefixes_received, w.value("Adj-in", 0u));
        s.prefixes_stale = w.value("Stale", 0u);
      }
      continue;
    }
    for (auto& s : out) {
      auto it = doc.find(s.address);
      if (it == doc.end() || !it->is_object()) continue;
      const json& n = *it;
      s.state = n.value("bgpState", "Unknown");
      s.connections_dropped = n.value("connectionsDropped", 0u);
      s.max_prefix_overflow = n.value("prefixesConfigExceedMax", false);
      s.nsf_passive = s.state == "Active" && n.value("bgpStateIs", "") == "passiveNSF";
      if (s.state == "Established") {
        s.uptime_s = n.value("bgpTimerUpMsec", std::uint64_t{0}) / 1000;
        s.established_epoch = n.value("bgpTimerUpEstablishedEpoch", std::uint64_t{0});
        // FRR lists the address families whose End-of-RIB this session received.
        if (n.contains("gracefulRestartInfo") && n["gracefulRestartInfo"].contains("endOfRibRecv")) {
          const json& eor = n["gracefulRestartInfo"]["endOfRibRecv"];
          s.end_of_rib_received = eor.is_object() && eor.value("ipv4Unicast", false);
        }
      }
      if (n.contains("addressFamilyInfo") && n["addressFamilyInfo"].contains("ipv4Unicast")) {
        const json& af = n["addressFamilyInfo"]["ipv4Unicast"];
        s.prefixes_accepted = af.value("acceptedPrefixCounter", 0u);
        // FRR keeps no count of what a peer sent before inbound policy unless soft-
        // reconfiguration is on: received is then the accepted count (docs/bgp.md).
        s.prefixes_received = std::max(s.prefixes_received, s.prefixes_accepted);
        s.prefixes_advertised = af.value("sentPrefixCounter", 0u);
      }
    }
  }
  return out;
}

std::vector<std::string> redial_commands(const BgpConfig& config, const std::vector<PeerStatus>& status) {
  std::vector<std::string> out;
  for (const auto& p : config.peers) {
    if (!p.reflector) continue;
    for (const auto& s : status)
      if (s.address == p.address.str() && s.nsf_passive)
        out.push_back("clear bgp" + bgp_instance_suffix(config) + " " + s.address);
  }
  if (!out.empty()) out.insert(out.begin(), "enable");
  return out;
}

std::vector<std::string> soft_clear_commands(const BgpConfig& config) {
  return {"enable", "clear bgp" + bgp_instance_suffix(config) + " ipv4 unicast * soft"};
}

void carry_peer_counters(const std::vector<PeerStatus>& before, std::vector<PeerStatus>& now) {
  for (auto& s : now) {
    auto old = std::find_if(before.begin(), before.end(), [&](const PeerStatus& b) { return b.address == s.address; });
    const bool was_down = old != before.end() && old->max_prefix_overflow;
    // A poll bgpd did not answer knows nothing: the state seen before stands.
    if (s.state == "Unknown") s.max_prefix_overflow = was_down;
    s.max_prefix_teardowns = (old != before.end() ? old->max_prefix_teardowns : 0) + (s.max_prefix_overflow && !was_down);
  }
}

}  // namespace vxfed::bgp
