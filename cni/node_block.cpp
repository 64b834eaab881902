#include "cni/node_block.hpp"

#include <algorithm>

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
  return check_requested_in_blocks(wanted, static_ips, {block}, network);
}

std::string blocks_text(const std::vector<net::Ipv4Prefix>& blocks) {
  std::string out = blocks.size() == 1 ? "block " : "blocks ";
  for (std::size_t i = 0; i < blocks.size(); ++i) out += (i ? ", " : "") + blocks[i].str();
  return out;
}

Done check_requested_in_blocks(const Requested& wanted, const std::vector<net::Ipv4Addr>& static_ips,
                               const std::vector<net::Ipv4Prefix>& blocks, const std::string& network) {
  const std::string owned = blocks_text(blocks);
  auto refuse = [&](net::Ipv4Addr ip, const std::string& where) -> Done {
    return cni_error(kInvalidConfig,
                     "the address " + ip.str() + " requested in " + where + " is outside this node's " + owned +
                         " of vxfed network \"" + network + "\"",
                     "every node of a network owns blocks of its subnet and the other nodes route only those "
                     "here; request an address of " + owned + " or place the pod on the node that "
                     "owns the address's block");
  };
  auto inside = [&](net::Ipv4Addr ip) {
    return std::any_of(blocks.begin(), blocks.end(), [&](const net::Ipv4Prefix& b) { return b.contains(ip); });
  };
  for (const auto ip : wanted.ips)
    if (!inside(ip)) return refuse(ip, wanted.ips_source);
  for (const auto ip : static_ips)
    if (!inside(ip)) return refuse(ip, "ipam.addresses");
  return done();
}

namespace {

// A host-local range's first and last address as host-local hands them out: rangeStart and
// rangeEnd when given, else the subnet without its network and broadcast address.
struct HostLocalRange {
  net::Ipv4Addr first, last;
};

Expected<HostLocalRange> read_range(const nlohmann::json& r, const std::string& field) {
  auto text = [&](const char* key) -> std::optional<std::string> {
    auto it = r.find(key);
    if (it == r.end() || !it->is_string() || it->get<std::string>().empty()) return std::nullopt;
    return it->get<std::string>();
  };
  const auto subnet_text = text("subnet");
  if (!subnet_text) return cni_error(kInvalidConfig, field + ".subnet: a host-local range needs a subnet");
  if (subnet_text->find(':') != std::string::npos)
    return cni_error(kInvalidConfig, field + ".subnet: '" + *subnet_text + "' is IPv6; vxfed networks are IPv4 only");
  // host-local masks host bits itself (Go's net.ParseCIDR), so 10.244.1.0/16 is its 10.244.0.0/16.
  const auto subnet = net::Ipv4Interface::parse(*subnet_text);
  if (!subnet) return cni_error(kInvalidConfig, field + ".subnet: " + subnet.error());
  const auto p = subnet->prefix();
  HostLocalRange out{p.network(), p.last()};
  if (p.len <= 30) {
    out.first.value++;
    out.last.value--;
  }
  for (auto [key, slot] : {std::pair{"rangeStart", &out.first}, std::pair{"rangeEnd", &out.last}}) {
    const auto v = text(key);
    if (!v) continue;
    auto a = net::Ipv4Addr::parse(*v);
    if (!a) return cni_error(kInvalidConfig, field + "." + key + ": " + a.error());
    *slot = *a;
  }
  return out;
}

}  // namespace

Done check_ranges_in_block(const nlohmann::json& netconf, const std::optional<net::Ipv4Prefix>& block,
                           const net::Ipv4Prefix& subnet, const std::string& network, const std::string& where) {
  auto ipam = netconf.find("ipam");
  if (ipam == netconf.end() || !ipam->is_object() || ipam->value("type", "") != "host-local") return done();
  const net::Ipv4Prefix inside = block.value_or(subnet);
  const std::string owned = block ? "this node's block " + block->str() + " of vxfed network \"" + network + "\""
                                  : "vxfed network \"" + network + "\"'s subnet " + subnet.str() +
                                        " (this node has all of it)";
  auto check = [&](const nlohmann::json& r, const std::string& field) -> Done {
    auto range = read_range(r, field);
    if (!range) return range.error();
    if (inside.contains(range->first) && inside.contains(range->last) && range->first.value <= range->last.value)
      return done();
    return cni_error(kInvalidConfig,
                     field + ": host-local's range " + range->first.str() + "-" + range->last.str() +
                         " is not inside " + owned,
                     "host-local hands out any address of its range and ADD refuses one outside " + inside.str() +
                         " (code 7); leave \"ranges\" out of the host-local section, and vxfed fills in each "
                         "node's block (docs/cni.md), or keep the range inside " + inside.str());
  };
  const std::string base = where + ".ipam";
  if (auto ranges = ipam->find("ranges"); ranges != ipam->end()) {
    if (!ranges->is_array()) return cni_error(kInvalidConfig, base + ".ranges: must be an array of range sets");
    for (std::size_t i = 0; i < ranges->size(); ++i) {
      const auto& set = (*ranges)[i];
      if (!set.is_array()) return cni_error(kInvalidConfig, base + ".ranges[" + std::to_string(i) + "]: must be an array of ranges");
      for (std::size_t j = 0; j < set.size(); ++j) {
        const std::string field = base + ".ranges[" + std::to_string(i) + "][" + std::to_string(j) + "]";
        if (!set[j].is_object()) return cni_error(kInvalidConfig, field + ": must be an object");
        if (auto r = check(set[j], field); !r) return r;
      }
    }
    return done();
  }
  if (ipam->contains("subnet")) return check(*ipam, base);  // the legacy single range
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
  return with_node_ranges(netconf, subnet, {block}, gateway);
}

nlohmann::json with_node_ranges(const nlohmann::json& netconf, const net::Ipv4Prefix& subnet,
                                const std::vector<net::Ipv4Prefix>& blocks, net::Ipv4Addr gateway) {
  nlohmann::json out = netconf;
  nlohmann::json set = nlohmann::json::array();
  for (const auto& block : blocks) {
    // Not the block's first and last address: for the block that starts or ends the subnet
    // they are the subnet's network and broadcast addresses, and for the others .0 and .255
    // of a /24 confuse enough software to be worth two addresses.
    std::uint32_t first = block.network().value, last = block.last().value;
    if (block.len <= 30) {
      ++first;
      --last;
    }
    set.push_back({
        {"subnet", subnet.str()},
        {"rangeStart", net::Ipv4Addr{first}.str()},
        {"rangeEnd", net::Ipv4Addr{last}.str()},
        {"gateway", gateway.str()},
    });
  }
  // One range set: host-local gives one address per set, trying its ranges in turn.
  out["ipam"]["ranges"] = nlohmann::json::array({set});
  return out;
}

}  // namespace vxfed::cni
