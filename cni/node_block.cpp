#include "cni/node_block.hpp"

namespace vxfed::cni {

std::vector<net::Ipv4Addr> static_addresses(const nlohmann::json& netconf) {
  std::vector<net::Ipv4Addr> out;
  if (!netconf.is_object()) return out;
  auto ipam = netconf.find("ipam");
  if (ipam == netconf.end() || !ipam->is_object()) return out;
  auto addrs = ipam->find("addresses");
  if (addrs == ipam->end() || !addrs->is_array()) return out;
  for (const auto& a : *addrs)
    if (a.is_object() && a.contains("address") && a["address"].is_string())
      if (auto i = net::Ipv4Interface::parse(a["address"].get<std::string>())) out.push_back(i->addr);
  return out;
}

Done check_requested_in_block(const Requested& wanted, const std::vector<net::Ipv4Addr>& static_ips,
                              const net::Ipv4Prefix& block, const std::string& network) {
  auto refuse = [&](net::Ipv4Addr ip, const std::string& where) -> Done {
    return cni_error(kInvalidConfig,
                     "the address " + ip.str() + " requested in " + where + " is outside this node's block " +
                         block.str() + " of vxfed network \"" + network + "\"",
                     "every node of a network owns one block of its subnet and the other nodes route only that "
                     "block here; request an address of " + block.str() + " or place the pod on the node that "
                     "owns the address's block");
  };
  for (const auto ip : wanted.ips)
    if (!block.contains(ip)) return refuse(ip, wanted.ips_source);
  for (const auto ip : static_ips)
    if (!block.contains(ip)) return refuse(ip, "ipam.addresses");
  return done();
}

bool ipam_takes_node_range(const nlohmann::json& netconf) {
  auto ipam = netconf.find("ipam");
  if (ipam == netconf.end() || !ipam->is_object()) return false;
  if (ipam->value("type", "") != "host-local") return false;
  return !ipam->contains("ranges") && !ipam->contains("subnet");
}

nlohmann::json with_node_range(const nlohmann::json& netconf, const net::Ipv4Prefix& subnet,
                               const net::Ipv4Prefix& block, net::Ipv4Addr gateway) {
  nlohmann::json out = netconf;
  // Not the block's first and last address: for the block that starts or ends the subnet they
  // are the subnet's network and broadcast addresses, and for the others .0 and .255 of a /24
  // confuse enough software to be worth two addresses.
  std::uint32_t first = block.network().value, last = block.last().value;
  if (block.len <= 30) {
    ++first;
    --last;
  }
  out["ipam"]["ranges"] = nlohmann::json::array({nlohmann::json::array({{
      {"subnet", subnet.str()},
      {"rangeStart", net::Ipv4Addr{first}.str()},
      {"rangeEnd", net::Ipv4Addr{last}.str()},
      {"gateway", gateway.str()},
  }})});
  return out;
}

}  // namespace vxfed::cni
