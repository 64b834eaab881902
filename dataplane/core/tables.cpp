// ForwardingTables::create: validation of every protobuf entry, then the flat lookup
// structures (see tables.hpp). Runs on the control thread; may allocate freely.
#include "dataplane/core/tables.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <new>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "common/net/vxlan.hpp"

namespace vxfed::dataplane {
namespace {

using wire::MacAddress;

constexpr std::uint32_t kNoPrefix = ~0u;
constexpr std::uint32_t kMaxVniValue = 0xfffffe;     // 0xffffff is reserved by us as "none"
constexpr std::uint32_t kMaxEcmpSlots = 256;         // weights are scaled into this many slots
constexpr std::size_t kMaxErrorsReported = 5;

using net::is_unicast;

// The table-building edge: text is parsed by common/net, then held as the network-order words
// the packet path compares against (never converted per packet).
std::optional<std::uint32_t> parse_ipv4_be(const std::string& text) {
  auto a = net::Ipv4Addr::parse(text);
  if (!a) return std::nullopt;
  return a->to_network();
}
std::string ipv4_text(std::uint32_t ip_be) { return net::Ipv4Addr::from_network(ip_be).str(); }

// A VTEP (or neighbour) address must be a unicast host address.
bool usable_host(std::uint32_t ip_be) {
  const std::uint32_t h = net::Ipv4Addr::from_network(ip_be).value;
  return h != 0 && h != 0xffffffff && (h >> 28) != 0xe && (h >> 24) != 127;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// Collects validation errors; the first few are reported together.
class Errors {
 public:
  void add(std::string message) {
    ++count_;
    if (messages_.size() < kMaxErrorsReported) messages_.push_back(std::move(message));
  }
  bool any() const { return count_ > 0; }
  Error error() const {
    std::string out = "tables refused: ";
    for (std::size_t i = 0; i < messages_.size(); ++i) out += (i ? "; " : "") + messages_[i];
    if (count_ > messages_.size())
      out += "; and " + std::to_string(count_ - messages_.size()) + " more";
    return make_error(out);
  }

 private:
  std::vector<std::string> messages_;
  std::size_t count_ = 0;
};

std::uint32_t sum_words(const void* data, std::size_t len) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2) sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
  return sum;
}

}  // namespace

// Builds a ForwardingTables in steps; each step validates its entries and records errors.
class TablesBuilder {
 public:
  TablesBuilder(const v1::Tables& in, const BuildContext& ctx)
      : in_(in), ctx_(ctx), t_(new ForwardingTables()) {}

  Result<std::unique_ptr<ForwardingTables>> build() {
    if (!check_context()) return errors_.error();
    t_->local_vtep_ip_be_ = ctx_.local_vtep_ip_be;
    t_->uplink_mac_ = ctx_.uplink_mac;
    t_->uplink_port_ = ctx_.uplink_port;
    t_->underlay_mtu_ = ctx_.underlay_mtu;
    t_->neighbors_ = ctx_.neighbors;
    t_->underlay_tag_ = ctx_.underlay_tag;
    networks();
    endpoints();
    routes();
    vteps();
    neighbors();
    if (errors_.any()) return errors_.error();
    if (!build_lpm()) return errors_.error();
    if (!assign_slots()) return errors_.error();
    commit_static_neighbors();
    return std::move(t_);
  }

 private:
  bool check_context() {
    if (!ctx_.neighbors || !ctx_.vni_slots)
      errors_.add("build context: neighbour cache and VNI counter slots are required");
    if (!usable_host(ctx_.local_vtep_ip_be))
      errors_.add("build context: local VTEP address " + ipv4_text(ctx_.local_vtep_ip_be) +
                  " is not a unicast host address");
    if (!is_unicast(ctx_.uplink_mac))
      errors_.add("build context: uplink MAC " + net::format_mac(ctx_.uplink_mac) + " is not unicast");
    if (ctx_.underlay_mtu < 576 || ctx_.underlay_mtu > 65535 - 64)
      errors_.add("build context: underlay MTU " + std::to_string(ctx_.underlay_mtu) +
                  " must be 576..65471");
    if (ctx_.uplink_port >= kMaxPorts)
      errors_.add("build context: uplink port " + std::to_string(ctx_.uplink_port) +
                  " beyond " + std::to_string(kMaxPorts));
    if (!ctx_.port_for_iface && in_.endpoints_size() > 0)
      errors_.add("build context: no port_for_iface callback, but there are endpoints");
    return !errors_.any();
  }

  void networks() {
    t_->network_index_.reserve(static_cast<std::size_t>(in_.networks_size()));
    for (int i = 0; i < in_.networks_size(); ++i) {
      const auto& n = in_.networks(i);
      const std::string where = "networks[" + std::to_string(i) + "] (vni " +
                                std::to_string(n.vni()) + ")";
      NetworkEntry e;
      bool ok = true;
      if (n.vni() < 1 || n.vni() > kMaxVniValue) {
        errors_.add(where + ": vni must be 1..16777214");
        ok = false;
      }
      auto gw = parse_ipv4_be(n.gateway_ip());
      if (!gw || !usable_host(*gw)) {
        errors_.add(where + ": gateway_ip " + quoted(n.gateway_ip()) +
                    " is not a unicast IPv4 address");
        ok = false;
      }
      if (n.gateway_mac().empty()) {
        e.gateway_mac = net::gateway_mac(n.vni());
      } else if (auto mac = net::parse_mac(n.gateway_mac()); mac && is_unicast(*mac)) {
        e.gateway_mac = *mac;
      } else {
        errors_.add(where + ": gateway_mac " + quoted(n.gateway_mac()) +
                    " is not a unicast MAC (aa:bb:cc:dd:ee:ff)");
        ok = false;
      }
      const std::uint32_t max_mtu = net::pod_mtu(ctx_.underlay_mtu);
      const std::uint32_t mtu = n.mtu() == 0 ? max_mtu : n.mtu();
      if (mtu < 68 || mtu > max_mtu) {
        errors_.add(where + ": mtu " + std::to_string(n.mtu()) + " must be 68.." +
                    std::to_string(max_mtu) + " (underlay MTU " +
                    std::to_string(ctx_.underlay_mtu) + " - " + std::to_string(net::kVxlanOverhead) +
                    "), or 0 for the maximum");
        ok = false;
      }
      if (!ok) {
        invalid_vnis_.insert(n.vni());  // reported once here, not again by every user
        continue;
      }
      e.vni = n.vni();
      e.vni_field_be = wire::vxlan_vni_field(n.vni());
      e.gateway_ip_be = *gw;
      e.mtu = static_cast<std::uint16_t>(mtu);
      if (!t_->network_index_.insert(n.vni(), static_cast<std::uint16_t>(t_->networks_.size()))) {
        errors_.add(where + ": vni listed twice");
        continue;
      }
      if (t_->networks_.size() >= 0xffff) {
        errors_.add(where + ": more than 65535 networks");
        continue;
      }
      t_->networks_.push_back(e);
    }
  }

  // Network index for a VNI referenced by another entry, or an error naming it.
  std::optional<std::uint16_t> network_of(std::uint32_t vni, const std::string& where) {
    if (const std::uint16_t* i = t_->network_index_.find(vni)) return *i;
    if (invalid_vnis_.count(vni)) return std::nullopt;
    errors_.add(where + ": vni " + std::to_string(vni) + " is not a configured network");
    return std::nullopt;
  }

  void endpoints() {
    t_->endpoints_.reserve(static_cast<std::size_t>(in_.endpoints_size()));
    t_->pod_ports_.assign(kMaxPorts, PodPortEntry{});
    std::unordered_map<std::string, int> ids;
    std::unordered_map<std::uint16_t, int> ports;
    for (int i = 0; i < in_.endpoints_size(); ++i) {
      const auto& ep = in_.endpoints(i);
      const std::string where = "endpoints[" + std::to_string(i) + "] (id " + quoted(ep.id()) + ")";
      bool ok = true;
      if (ep.id().empty()) {
        errors_.add(where + ": id is empty");
        ok = false;
      } else if (auto [it, fresh] = ids.emplace(ep.id(), i); !fresh) {
        errors_.add(where + ": id already used by endpoints[" + std::to_string(it->second) + "]");
        ok = false;
      }
      auto net = network_of(ep.vni(), where);
      auto ip = parse_ipv4_be(ep.ip());
      if (!ip || !usable_host(*ip)) {
        errors_.add(where + ": ip " + quoted(ep.ip()) + " is not a unicast IPv4 address");
        ok = false;
      }
      auto mac = net::parse_mac(ep.mac());
      if (!mac || !is_unicast(*mac)) {
        errors_.add(where + ": mac " + quoted(ep.mac()) + " is not a unicast MAC");
        ok = false;
      }
      std::optional<std::uint16_t> port;
      if (ep.iface().empty()) {
        errors_.add(where + ": iface is empty");
        ok = false;
      } else if (ctx_.port_for_iface) {
        port = ctx_.port_for_iface(ep.iface());
        if (!port) {
          errors_.add(where + ": iface " + quoted(ep.iface()) + " has no dataplane port");
          ok = false;
        } else if (*port == ctx_.uplink_port || *port >= kMaxPorts) {
          errors_.add(where + ": iface " + quoted(ep.iface()) + " maps to port " +
                      std::to_string(*port) + ", which is the uplink or out of range");
          ok = false;
        } else if (auto [it, fresh] = ports.emplace(*port, i); !fresh) {
          errors_.add(where + ": iface " + quoted(ep.iface()) + " (port " +
                      std::to_string(*port) + ") already carries endpoints[" +
                      std::to_string(it->second) + "]");
          ok = false;
        }
      }
      if (!ok || !net) continue;
      const NetworkEntry& n = t_->networks_[*net];
      if (*ip == n.gateway_ip_be) {
        errors_.add(where + ": ip " + ep.ip() + " is the gateway of vni " + std::to_string(n.vni));
        continue;
      }
      if (!t_->endpoints_.insert(ForwardingTables::endpoint_key(*net, *ip), EndpointEntry{*port, *mac})) {
        errors_.add(where + ": ip " + ep.ip() + " already used by another endpoint in vni " +
                    std::to_string(n.vni));
        continue;
      }
      t_->pod_ports_[*port] = PodPortEntry{true, *net, *ip, *mac};
      endpoints_.push_back(PendingEndpoint{*ip, *net, EndpointEntry{*port, *mac}});
    }
  }

  // VTEP index for an address, creating the VTEP on first use.
  std::uint32_t vtep_for(std::uint32_t ip_be) {
    auto [it, fresh] = vtep_ids_.emplace(ip_be, static_cast<std::uint32_t>(vtep_ips_.size()));
    if (fresh) vtep_ips_.push_back(ip_be);
    return it->second;
  }

  bool check_vtep(const std::string& text, const std::string& where, std::uint32_t* ip_be) {
    auto ip = parse_ipv4_be(text);
    if (!ip || !usable_host(*ip)) {
      errors_.add(where + " " + quoted(text) + " is not a unicast IPv4 address");
      return false;
    }
    if (*ip == ctx_.local_vtep_ip_be) {
      errors_.add(where + " " + quoted(text) + " is this node's own VTEP");
      return false;
    }
    *ip_be = *ip;
    return true;
  }

  void routes() {
    std::map<std::vector<std::pair<std::uint32_t, std::uint32_t>>, std::uint32_t> group_ids;
    std::unordered_map<std::uint64_t, int> seen;  // (vni, prefix) -> index
    for (int i = 0; i < in_.routes_size(); ++i) {
      const auto& r = in_.routes(i);
      const std::string where = "routes[" + std::to_string(i) + "] (vni " +
                                std::to_string(r.vni()) + ", prefix " + quoted(r.prefix()) + ")";
      auto net = network_of(r.vni(), where);
      auto prefix = net::Ipv4Prefix::parse(r.prefix());
      bool ok = net.has_value();
      if (!prefix) {
        errors_.add(where + ": prefix: " + prefix.error());
        ok = false;
      }
      if (r.next_hops_size() == 0) {
        errors_.add(where + ": next_hops is empty");
        ok = false;
      }
      std::vector<std::pair<std::uint32_t, std::uint32_t>> hops;  // (vtep index, weight)
      std::unordered_set<std::uint32_t> hop_ips;
      for (int h = 0; h < r.next_hops_size(); ++h) {
        const auto& nh = r.next_hops(h);
        const std::string hwhere = where + ": next_hops[" + std::to_string(h) + "].vtep";
        std::uint32_t ip = 0;
        if (!check_vtep(nh.vtep(), hwhere, &ip)) {
          ok = false;
          continue;
        }
        if (!hop_ips.insert(ip).second) {
          errors_.add(hwhere + " " + quoted(nh.vtep()) + " listed twice");
          ok = false;
          continue;
        }
        hops.emplace_back(ip, nh.weight() == 0 ? 1 : nh.weight());
      }
      if (!ok) continue;
      const std::uint64_t key = (static_cast<std::uint64_t>(r.vni()) << 40) |
                                (static_cast<std::uint64_t>(prefix->addr) << 8) | prefix->len;
      if (auto [it, fresh] = seen.emplace(key, i); !fresh) {
        errors_.add(where + ": same vni and prefix as routes[" + std::to_string(it->second) + "]");
        continue;
      }
      std::sort(hops.begin(), hops.end());
      auto [git, gfresh] = group_ids.emplace(hops, static_cast<std::uint32_t>(t_->groups_.size()));
      if (gfresh) add_group(hops);
      for (const auto& [ip, w] : hops) allow(vtep_for(ip), *net);
      routes_.push_back(PendingRoute{*prefix, *net, git->second});
    }
  }

  void add_group(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& hops) {
    std::uint64_t total = 0;
    for (const auto& hop : hops) total += hop.second;
    NextHopGroup g;
    g.first = static_cast<std::uint32_t>(t_->group_slots_.size());
    for (const auto& [ip, w] : hops) {
      std::uint64_t n = w;
      if (total > kMaxEcmpSlots) n = std::max<std::uint64_t>(1, (w * kMaxEcmpSlots + total / 2) / total);
      const std::uint32_t v = vtep_for(ip);
      for (std::uint64_t k = 0; k < n; ++k) t_->group_slots_.push_back(v);
    }
    g.count = static_cast<std::uint32_t>(t_->group_slots_.size()) - g.first;
    t_->groups_.push_back(g);
  }

  void allow(std::uint32_t vtep, std::uint16_t net) {
    allowed_pairs_.insert((static_cast<std::uint64_t>(vtep) << 16) | net);
  }

  void vteps() {
    std::unordered_map<std::uint32_t, int> seen;
    for (int i = 0; i < in_.vteps_size(); ++i) {
      const auto& v = in_.vteps(i);
      const std::string where = "vteps[" + std::to_string(i) + "] (ip " + quoted(v.ip()) + ")";
      std::uint32_t ip = 0;
      if (!check_vtep(v.ip(), where + ": ip", &ip)) continue;
      if (auto [it, fresh] = seen.emplace(ip, i); !fresh) {
        errors_.add(where + ": listed twice (also vteps[" + std::to_string(it->second) + "])");
        continue;
      }
      const std::uint32_t vt = vtep_for(ip);
      for (int k = 0; k < v.vnis_size(); ++k)
        if (auto net = network_of(v.vnis(k), where + ": vnis[" + std::to_string(k) + "]"))
          allow(vt, *net);
    }
  }

  void neighbors() {
    std::unordered_map<std::uint32_t, int> seen;
    for (int i = 0; i < in_.neighbors_size(); ++i) {
      const auto& nb = in_.neighbors(i);
      const std::string where = "neighbors[" + std::to_string(i) + "] (ip " + quoted(nb.ip()) + ")";
      auto ip = parse_ipv4_be(nb.ip());
      auto mac = net::parse_mac(nb.mac());
      if (!ip || !usable_host(*ip)) {
        errors_.add(where + ": ip is not a unicast IPv4 address");
        continue;
      }
      if (!mac || !is_unicast(*mac)) {
        errors_.add(where + ": mac " + quoted(nb.mac()) + " is not a unicast MAC");
        continue;
      }
      if (auto [it, fresh] = seen.emplace(*ip, i); !fresh) {
        errors_.add(where + ": listed twice (also neighbors[" + std::to_string(it->second) + "])");
        continue;
      }
      static_neighbors_.emplace_back(*ip, *mac);
    }
  }

  bool build_lpm() {
    // Union of every network's route prefixes and local endpoints' /32s: one LPM; prefix id =
    // LPM value. With the endpoints in it, one lookup answers both "local endpoint?" and
    // "which route?" for the encap fast path (PrefixInfo).
    std::unordered_map<std::uint64_t, std::uint32_t> prefix_ids;  // (addr << 8 | len) -> id
    std::vector<net::Ipv4Prefix> prefixes;
    auto pkey = [](std::uint32_t addr, std::uint32_t len) {
      return (static_cast<std::uint64_t>(addr) << 8) | len;
    };
    auto id_of = [&](std::uint32_t addr, std::uint32_t len) {
      auto [it, fresh] = prefix_ids.emplace(pkey(addr, len), static_cast<std::uint32_t>(prefixes.size()));
      if (fresh) prefixes.push_back(net::Ipv4Prefix{addr, static_cast<std::uint8_t>(len)});
      return it->second;
    };
    // What each (prefix, network) resolves to; a prefix with entries of one network only is
    // resolved straight from t_->prefix_info_ without a hash lookup.
    constexpr std::uint32_t kNoOwner = ~0u;
    std::vector<std::uint32_t> owner;          // prefix id -> network index, kNoOwner, or kMany
    constexpr std::uint32_t kMany = ~1u;
    auto own = [&](std::uint32_t id, std::uint16_t net) {
      if (owner.size() <= id) owner.resize(id + 1, kNoOwner);
      if (owner[id] == kNoOwner) owner[id] = net;
      else if (owner[id] != net) owner[id] = kMany;
    };
    std::vector<std::uint32_t> route_ids;
    route_ids.reserve(routes_.size());
    for (const auto& r : routes_) {
      const std::uint32_t id = id_of(r.prefix.addr, r.prefix.len);
      route_ids.push_back(id);
      own(id, r.network);
    }
    std::vector<std::uint32_t> endpoint_ids;
    endpoint_ids.reserve(endpoints_.size());
    for (const auto& e : endpoints_) {
      const std::uint32_t id = id_of(ntohl(e.ip_be), 32);
      endpoint_ids.push_back(id);
      own(id, e.network);
    }
    owner.resize(prefixes.size(), kNoOwner);
    if (prefixes.size() >= (1u << 30)) {
      errors_.add("routes: more than 2^30 distinct prefixes");
      return false;
    }
    t_->route_group_.reserve(routes_.size());
    t_->prefix_info_.assign(prefixes.size(), PrefixInfo{});
    for (std::size_t i = 0; i < routes_.size(); ++i) {
      const auto& r = routes_[i];
      const std::uint32_t id = route_ids[i];
      t_->route_group_.insert(ForwardingTables::route_key(id, r.network), r.group);
      if (owner[id] == r.network) t_->prefix_info_[id] = PrefixInfo{r.network, PrefixInfo::kRoute, 0, r.group};
    }
    t_->endpoint_list_.reserve(endpoints_.size());
    for (std::size_t i = 0; i < endpoints_.size(); ++i) {
      const auto& e = endpoints_[i];
      const std::uint32_t id = endpoint_ids[i];
      t_->endpoint_list_.push_back(e.entry);
      // A local endpoint wins over a route of its network at the same /32.
      if (owner[id] == e.network)
        t_->prefix_info_[id] = PrefixInfo{e.network, PrefixInfo::kEndpoint, 0,
                                          static_cast<std::uint32_t>(t_->endpoint_list_.size() - 1)};
      else
        t_->prefix_info_[id].has_endpoints = 1;
    }
    for (std::uint32_t id = 0; id < prefixes.size(); ++id)
      if (owner[id] == kMany) t_->prefix_info_[id].network = PrefixInfo::kShared;
    t_->route_count_ = routes_.size();
    t_->prefix_parent_.assign(prefixes.size(), kNoPrefix);
    std::vector<LpmTable::Entry> entries;
    entries.reserve(prefixes.size());
    for (std::uint32_t id = 0; id < prefixes.size(); ++id) {
      const net::Ipv4Prefix& p = prefixes[id];
      entries.push_back(LpmTable::Entry{p.addr, p.len, id});
      for (int len = p.len - 1; len >= 0; --len) {
        const std::uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);
        if (auto it = prefix_ids.find(pkey(p.addr & mask, static_cast<std::uint32_t>(len))); it != prefix_ids.end()) {
          t_->prefix_parent_[id] = it->second;
          break;
        }
      }
    }
    if (entries.empty()) return true;
    try {
      t_->lpm_.build(std::move(entries));
    } catch (const std::bad_alloc&) {
      errors_.add("routes: out of memory building the LPM table (64 MiB + 1 KiB per /25../32 group)");
      return false;
    }
    return true;
  }

  // Neighbour and counter slots: the only steps with effects outside the new object (slots
  // are assigned for good, which is harmless if the tables are then dropped).
  bool assign_slots() {
    for (auto& n : t_->networks_) {
      auto slot = ctx_.vni_slots->slot_for(n.vni);
      if (!slot) {
        errors_.add(slot.error());
        return false;
      }
      n.counter_slot = *slot;
    }
    t_->vtep_index_.reserve(vtep_ips_.size());
    t_->vteps_.reserve(vtep_ips_.size());
    for (std::uint32_t v = 0; v < vtep_ips_.size(); ++v) {
      auto slot = ctx_.neighbors->slot_for(vtep_ips_[v]);
      if (!slot) {
        errors_.add("vtep " + ipv4_text(vtep_ips_[v]) + ": " + slot.error());
        return false;
      }
      t_->vteps_.push_back(make_vtep(vtep_ips_[v], *slot));
      t_->vtep_index_.insert(vtep_ips_[v], v);
    }
    t_->allowed_.reserve(allowed_pairs_.size());
    t_->allowed_by_ip_.reserve(allowed_pairs_.size());
    for (std::uint64_t k : allowed_pairs_) {
      t_->allowed_.insert(k, 1);
      const auto vtep = static_cast<std::uint32_t>(k >> 16);
      const auto net = static_cast<std::uint16_t>(k & 0xffff);
      t_->allowed_by_ip_.insert((static_cast<std::uint64_t>(vtep_ips_[vtep]) << 24) | t_->networks_[net].vni, net);
    }
    for (const auto& [ip, mac] : static_neighbors_) {
      auto slot = ctx_.neighbors->slot_for(ip);
      if (!slot) {
        errors_.add("neighbor " + ipv4_text(ip) + ": " + slot.error());
        return false;
      }
      static_slots_.emplace_back(*slot, mac);
    }
    return true;
  }

  VtepEntry make_vtep(std::uint32_t ip_be, std::uint32_t slot) const {
    VtepEntry v;
    v.ip_be = ip_be;
    v.neighbor_slot = slot;
    auto& o = v.outer;
    o.eth.src = ctx_.uplink_mac;
    o.eth.ether_type_be = wire::to_be16(wire::kEtherTypeIpv4);
    o.ip.version_ihl = 0x45;
    o.ip.fragment_be = wire::to_be16(wire::kIpv4FlagDf);
    o.ip.ttl = 64;
    o.ip.protocol = wire::kIpProtoUdp;
    o.ip.src_be = ctx_.local_vtep_ip_be;
    o.ip.dst_be = ip_be;
    o.udp.dst_port_be = wire::to_be16(wire::kVxlanUdpPort);
    o.vxlan.flags = wire::kVxlanFlagsVni;
    // TOS, total length and checksum are 0 here: the pipeline adds the per-packet words.
    v.checksum_base = sum_words(&o.ip, sizeof(o.ip));
    return v;
  }

  void commit_static_neighbors() {
    NeighborCache& cache = *ctx_.neighbors;
    std::unordered_set<std::uint32_t> now;
    for (const auto& [slot, mac] : static_slots_) {
      cache.set_static(slot, mac);
      now.insert(slot);
    }
    for (std::uint32_t slot = 0; slot < cache.size(); ++slot)
      if (!now.count(slot)) cache.clear_static(slot);
  }

  struct PendingRoute {
    net::Ipv4Prefix prefix;
    std::uint16_t network;
    std::uint32_t group;
  };
  struct PendingEndpoint {
    std::uint32_t ip_be;
    std::uint16_t network;
    EndpointEntry entry;
  };

  const v1::Tables& in_;
  const BuildContext& ctx_;
  std::unique_ptr<ForwardingTables> t_;
  Errors errors_;
  std::vector<PendingRoute> routes_;
  std::vector<PendingEndpoint> endpoints_;
  std::unordered_map<std::uint32_t, std::uint32_t> vtep_ids_;
  std::vector<std::uint32_t> vtep_ips_;
  std::set<std::uint64_t> allowed_pairs_;
  std::unordered_set<std::uint32_t> invalid_vnis_;
  std::vector<std::pair<std::uint32_t, MacAddress>> static_neighbors_;
  std::vector<std::pair<std::uint32_t, MacAddress>> static_slots_;
};

Result<std::unique_ptr<ForwardingTables>> ForwardingTables::create(const v1::Tables& tables,
                                                                   const BuildContext& context) {
  return TablesBuilder(tables, context).build();
}

Destination ForwardingTables::resolve_shared(std::uint16_t network, std::uint32_t dst_ip_be,
                                             std::uint32_t id) const {
  if (prefix_info_[id].has_endpoints)
    if (const EndpointEntry* ep = endpoint(network, dst_ip_be)) return {ep, nullptr};
  while (id != LpmTable::kNone) {
    const PrefixInfo& p = prefix_info_[id];
    if (p.network == network) return {nullptr, &groups_[p.value]};  // a route: endpoints are /32s
    if (p.network == PrefixInfo::kShared)
      if (const std::uint32_t* g = route_group_.find(route_key(id, network))) return {nullptr, &groups_[*g]};
    id = prefix_parent_[id];
  }
  return {};
}

std::vector<std::uint16_t> ForwardingTables::pod_port_ids() const {
  std::vector<std::uint16_t> out;
  for (std::uint16_t p = 0; p < pod_ports_.size(); ++p)
    if (pod_ports_[p].valid) out.push_back(p);
  return out;
}

}  // namespace vxfed::dataplane
