// TablesPlanner: a Snapshot or Delta checked against the tables in force and turned into the
// list of entries to add, change and remove (tables_change.hpp), without changing anything.
// The result of a Delta is what apply_delta() would make of the tables' protobuf: upserts by
// key, then the removals in its order (networks with their entries, endpoints, routes, VTEPs,
// neighbours), each removal of something absent refused. Only what the result contains is
// validated, as ForwardingTables::create validates a whole Snapshot.
#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/net/vxlan.hpp"
#include "dataplane/core/tables_change.hpp"

namespace vxfed::dataplane {
namespace {

using wire::MacAddress;

constexpr std::uint32_t kMaxVniValue = 0xfffffe;  // 0xffffff is reserved by us as "none"
constexpr std::size_t kMaxErrorsReported = 5;
constexpr int kMaxNextHops = 4096;

using net::is_unicast;

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
    if (count_ > messages_.size()) out += "; and " + std::to_string(count_ - messages_.size()) + " more";
    return make_error(out);
  }

 private:
  std::vector<std::string> messages_;
  std::size_t count_ = 0;
};

// (vni, prefix) as one number; vni < 2^24.
std::uint64_t route_id(std::uint32_t vni, const Prefix& p) {
  return (static_cast<std::uint64_t>(vni) << 40) | (static_cast<std::uint64_t>(p.addr) << 8) | p.len;
}
std::uint64_t addr_id(std::uint32_t vni, std::uint32_t ip_be) { return (static_cast<std::uint64_t>(vni) << 32) | ip_be; }

}  // namespace

class TablesPlanner {
 public:
  TablesPlanner(const ForwardingTables& t, const BuildContext& ctx, bool snapshot)
      : t_(t), ctx_(ctx), snapshot_(snapshot), list_(snapshot ? "" : "upsert.") {}

  Result<TablesChange> plan(const v1::Tables& up, const v1::Delta* delta) {
    if (snapshot_ && !check_context(up)) return errors_.error();
    collect_upserts(up);
    if (delta)
      if (auto st = collect_removals(*delta); !st) return make_error(st.error());
    networks(up);
    endpoints(up);
    routes(up);
    vteps(up);
    neighbors(up);
    services(up);
    policies(up);
    gateways_against_endpoints(up);
    if (!errors_.any()) capacity();
    if (errors_.any()) return errors_.error();
    return std::move(change_);
  }

 private:
  using NetworkState = ForwardingTables::NetworkState;

  bool check_context(const v1::Tables& up) {
    if (!ctx_.neighbors || !ctx_.vni_slots)
      errors_.add("build context: neighbour cache and VNI counter slots are required");
    if (!usable_host(ctx_.local_vtep_ip_be))
      errors_.add("build context: local VTEP address " + ipv4_text(ctx_.local_vtep_ip_be) +
                  " is not a unicast host address");
    if (!is_unicast(ctx_.uplink_mac)) errors_.add("build context: uplink MAC " + mac_text(ctx_.uplink_mac) + " is not unicast");
    if (ctx_.underlay_mtu < 576 || ctx_.underlay_mtu > 65535 - 64)
      errors_.add("build context: underlay MTU " + std::to_string(ctx_.underlay_mtu) + " must be 576..65471");
    if (ctx_.uplink_port >= kMaxPorts)
      errors_.add("build context: uplink port " + std::to_string(ctx_.uplink_port) + " beyond " + std::to_string(kMaxPorts));
    if (!ctx_.port_for_iface && up.endpoints_size() > 0)
      errors_.add("build context: no port_for_iface callback, but there are endpoints");
    return !errors_.any();
  }

  std::string at(const char* list, int i) const { return list_ + list + "[" + std::to_string(i) + "]"; }

  // ---- keys of the request: which upsert of each key counts (a Delta: the last) ----
  void collect_upserts(const v1::Tables& up) {
    if (snapshot_) return;  // every entry counts; duplicates are errors
    for (int i = 0; i < up.networks_size(); ++i) last_network_[up.networks(i).vni()] = i;
    for (int i = 0; i < up.endpoints_size(); ++i) last_endpoint_[up.endpoints(i).id()] = i;
    for (int i = 0; i < up.routes_size(); ++i) {
      std::string why;
      const auto& r = up.routes(i);
      if (auto p = parse_prefix(r.prefix(), &why); p && r.vni() <= kMaxVniValue) last_route_[route_id(r.vni(), *p)] = i;
    }
    for (int i = 0; i < up.vteps_size(); ++i)
      if (auto ip = parse_ipv4(up.vteps(i).ip())) last_vtep_[*ip] = i;
    for (int i = 0; i < up.neighbors_size(); ++i)
      if (auto ip = parse_ipv4(up.neighbors(i).ip())) last_neighbor_[*ip] = i;
    for (int i = 0; i < up.services_size(); ++i) last_service_[up.services(i).id()] = i;
    for (int i = 0; i < up.policies_size(); ++i) last_policy_[up.policies(i).vni()] = i;
    up_ = &up;
  }
  // False for an upsert that a later one of the same key replaces.
  template <typename Map, typename Key>
  bool counts(const Map& last, const Key& key, int i) const {
    if (snapshot_) return true;
    auto it = last.find(key);
    return it == last.end() || it->second == i;
  }

  // ---- the state after the upserts (before removals), as apply_delta sees it ----
  bool network_present(std::uint32_t vni) const {
    return t_.network_state_by_vni_.count(vni) || last_network_.count(vni);
  }
  // The VNI an endpoint id has after the upserts, if present.
  std::optional<std::uint32_t> endpoint_vni(const std::string& id) const {
    if (auto it = last_endpoint_.find(id); it != last_endpoint_.end()) return up_->endpoints(it->second).vni();
    if (auto it = t_.endpoint_state_.find(id); it != t_.endpoint_state_.end()) return it->second.vni;
    return std::nullopt;
  }
  bool route_present(std::uint64_t key) const { return last_route_.count(key) || current_route(key).has_value(); }
  // The group of a route in force, by (vni, prefix) key.
  std::optional<std::uint32_t> current_route(std::uint64_t key) const {
    const auto vni = static_cast<std::uint32_t>(key >> 40);
    auto net = t_.network_state_by_vni_.find(vni);
    if (net == t_.network_state_by_vni_.end()) return std::nullopt;
    auto id = t_.prefix_ids_.get(key & ((1ull << 40) - 1));
    if (!id) return std::nullopt;
    return t_.route_group_.get(ForwardingTables::route_key(*id, net->second.index));
  }

  Status collect_removals(const v1::Delta& d) {
    for (int i = 0; i < d.remove_networks_size(); ++i) {
      const std::uint32_t vni = d.remove_networks(i);
      if (!network_present(vni))
        return make_error("remove_networks[" + std::to_string(i) + "] (vni " + std::to_string(vni) + "): not present");
      gone_networks_.insert(vni);
    }
    if (!gone_networks_.empty()) {
      // A network takes its endpoints, routes and explicit VTEP permissions with it.
      for (const auto& [id, e] : t_.endpoint_state_)
        if (auto vni = endpoint_vni(id); gone_networks_.count(*vni)) cascaded_endpoints_.insert(id);
      for (const auto& [id, i] : last_endpoint_)
        if (gone_networks_.count(up_->endpoints(i).vni())) cascaded_endpoints_.insert(id);
      std::unordered_set<std::uint16_t> indices;
      for (std::uint32_t vni : gone_networks_)
        if (auto it = t_.network_state_by_vni_.find(vni); it != t_.network_state_by_vni_.end() && it->second.routes)
          indices.insert(it->second.index);
      if (!indices.empty()) {
        std::unordered_map<std::uint16_t, std::uint32_t> vni_of;
        for (const auto& [vni, s] : t_.network_state_by_vni_) vni_of[s.index] = vni;
        t_.route_group_.for_each([&](std::uint64_t key, std::uint32_t) {
          if (key & ForwardingTables::kEndpointAtPrefix) return;
          const auto n = static_cast<std::uint16_t>(key & 0xffff);
          if (!indices.count(n)) return;
          const auto id = static_cast<std::uint32_t>(key >> 16);
          cascaded_routes_.insert(route_id(vni_of[n], Prefix{t_.prefix_addr_[id], t_.prefix_len_[id]}));
        });
      }
      for (const auto& [key, i] : last_route_)
        if (gone_networks_.count(static_cast<std::uint32_t>(key >> 40))) cascaded_routes_.insert(key);
    }
    gone_endpoints_ = cascaded_endpoints_;
    gone_routes_ = cascaded_routes_;
    // A key named twice is removed once (apply_delta checks every removal against the entries
    // present before the removals of its kind).
    for (int i = 0; i < d.remove_endpoints_size(); ++i) {
      const std::string& id = d.remove_endpoints(i);
      if (!endpoint_vni(id) || cascaded_endpoints_.count(id))
        return make_error("remove_endpoints[" + std::to_string(i) + "] (id \"" + id + "\"): not present");
      gone_endpoints_.insert(id);
    }
    for (int i = 0; i < d.remove_routes_size(); ++i) {
      const auto& k = d.remove_routes(i);
      std::string why;
      const auto p = parse_prefix(k.prefix(), &why);
      const std::uint64_t key = p && k.vni() <= kMaxVniValue ? route_id(k.vni(), *p) : ~0ull;
      if (key == ~0ull || !route_present(key) || cascaded_routes_.count(key))
        return make_error("remove_routes[" + std::to_string(i) + "] (vni " + std::to_string(k.vni()) + ", prefix \"" +
                          k.prefix() + "\"): not present");
      gone_routes_.insert(key);
    }
    for (int i = 0; i < d.remove_vteps_size(); ++i) {
      const auto ip = parse_ipv4(d.remove_vteps(i));
      if (!ip || (!t_.explicit_vteps_.count(*ip) && !last_vtep_.count(*ip)))
        return make_error("remove_vteps[" + std::to_string(i) + "] (ip \"" + d.remove_vteps(i) + "\"): not present");
      gone_vteps_.insert(*ip);
    }
    for (int i = 0; i < d.remove_neighbors_size(); ++i) {
      const auto ip = parse_ipv4(d.remove_neighbors(i));
      if (!ip || (!t_.static_neighbors_.count(*ip) && !last_neighbor_.count(*ip)))
        return make_error("remove_neighbors[" + std::to_string(i) + "] (ip \"" + d.remove_neighbors(i) + "\"): not present");
      gone_neighbors_.insert(*ip);
    }
    // Services go with their network too; then the named ones.
    if (!gone_networks_.empty()) {
      for (const auto& [id, st] : t_.service_state_)
        if (gone_networks_.count(service_vni(id).value_or(st.vni))) cascaded_services_.insert(id);
      for (const auto& [id, i] : last_service_)
        if (gone_networks_.count(up_->services(i).vni())) cascaded_services_.insert(id);
    }
    gone_services_ = cascaded_services_;
    for (int i = 0; i < d.remove_services_size(); ++i) {
      const std::string& id = d.remove_services(i);
      if (!service_vni(id) || cascaded_services_.count(id))
        return make_error("remove_services[" + std::to_string(i) + "] (id \"" + id + "\"): not present");
      gone_services_.insert(id);
    }
    // Network policies likewise: with their network, then the named ones.
    for (std::uint32_t vni : gone_networks_)
      if (t_.policy_state_.count(vni) || last_policy_.count(vni)) cascaded_policies_.insert(vni);
    gone_policies_ = cascaded_policies_;
    for (int i = 0; i < d.remove_policies_size(); ++i) {
      const std::uint32_t vni = d.remove_policies(i);
      if ((!t_.policy_state_.count(vni) && !last_policy_.count(vni)) || cascaded_policies_.count(vni))
        return make_error("remove_policies[" + std::to_string(i) + "] (vni " + std::to_string(vni) + "): not present");
      gone_policies_.insert(vni);
    }
    return {};
  }
  // The VNI a service id has after the upserts, if present.
  std::optional<std::uint32_t> service_vni(const std::string& id) const {
    if (auto it = last_service_.find(id); it != last_service_.end()) return up_->services(it->second).vni();
    if (auto it = t_.service_state_.find(id); it != t_.service_state_.end()) return it->second.vni;
    return std::nullopt;
  }

  // ---- the final networks ----
  enum class NetworkIs { absent, invalid, present };
  // Whether vni is a network of the result, and its gateway.
  NetworkIs final_network(std::uint32_t vni, std::uint32_t* gateway_be = nullptr) const {
    if (gone_networks_.count(vni)) return NetworkIs::absent;
    if (auto it = final_specs_.find(vni); it != final_specs_.end()) {
      if (gateway_be) *gateway_be = it->second.gateway_ip_be;
      return NetworkIs::present;
    }
    if (invalid_vnis_.count(vni)) return NetworkIs::invalid;
    if (auto it = t_.network_state_by_vni_.find(vni); it != t_.network_state_by_vni_.end()) {
      if (gateway_be) *gateway_be = t_.network(it->second.index).gateway_ip_be;
      return NetworkIs::present;
    }
    return NetworkIs::absent;
  }
  bool check_network_ref(std::uint32_t vni, const std::string& where, std::uint32_t* gateway_be = nullptr) {
    switch (final_network(vni, gateway_be)) {
      case NetworkIs::present: return true;
      case NetworkIs::invalid: return false;  // reported once, with the network
      case NetworkIs::absent: break;
    }
    errors_.add(where + ": vni " + std::to_string(vni) + " is not a configured network");
    return false;
  }

  void networks(const v1::Tables& up) {
    std::unordered_map<std::uint32_t, int> seen;
    for (int i = 0; i < up.networks_size(); ++i) {
      const auto& n = up.networks(i);
      if (!counts(last_network_, n.vni(), i) || gone_networks_.count(n.vni())) continue;
      const std::string where = at("networks", i) + " (vni " + std::to_string(n.vni()) + ")";
      NetworkSpec s;
      bool ok = true;
      if (n.vni() < 1 || n.vni() > kMaxVniValue) {
        errors_.add(where + ": vni must be 1..16777214");
        ok = false;
      }
      auto gw = parse_ipv4(n.gateway_ip());
      if (!gw || !usable_host(*gw)) {
        errors_.add(where + ": gateway_ip " + quoted(n.gateway_ip()) + " is not a unicast IPv4 address");
        ok = false;
      }
      if (n.gateway_mac().empty()) {
        s.gateway_mac = net::gateway_mac(n.vni());
      } else if (auto mac = parse_mac(n.gateway_mac()); mac && is_unicast(*mac)) {
        s.gateway_mac = *mac;
        s.mac_given = true;
      } else {
        errors_.add(where + ": gateway_mac " + quoted(n.gateway_mac()) + " is not a unicast MAC (aa:bb:cc:dd:ee:ff)");
        ok = false;
      }
      const std::uint32_t max_mtu = net::pod_mtu(ctx_.underlay_mtu);
      const std::uint32_t mtu = n.mtu() == 0 ? max_mtu : n.mtu();
      if (mtu < 68 || mtu > max_mtu) {
        errors_.add(where + ": mtu " + std::to_string(n.mtu()) + " must be 68.." + std::to_string(max_mtu) +
                    " (underlay MTU " + std::to_string(ctx_.underlay_mtu) + " - " +
                    std::to_string(net::kVxlanOverhead) + "), or 0 for the maximum");
        ok = false;
      }
      if (!ok) {
        invalid_vnis_.insert(n.vni());  // reported once here, not again by every user
        continue;
      }
      if (auto [it, fresh] = seen.emplace(n.vni(), i); !fresh) {
        errors_.add(where + ": vni listed twice");
        continue;
      }
      s.vni = n.vni();
      s.gateway_ip_be = *gw;
      s.mtu = static_cast<std::uint16_t>(mtu);
      s.mtu_given = n.mtu();
      final_specs_[s.vni] = s;
      network_where_[s.vni] = where;
      if (auto it = t_.network_state_by_vni_.find(s.vni); it != t_.network_state_by_vni_.end()) {
        const NetworkEntry& cur = t_.network(it->second.index);
        if (cur.gateway_ip_be == s.gateway_ip_be && cur.gateway_mac == s.gateway_mac && cur.mtu == s.mtu &&
            it->second.mac_given == s.mac_given && it->second.mtu_given == s.mtu_given)
          continue;  // unchanged
        if (cur.gateway_ip_be != s.gateway_ip_be) gateway_changed_.push_back(s.vni);
      }
      change_.networks.push_back(s);
    }
    for (std::uint32_t vni : gone_networks_)
      if (t_.network_state_by_vni_.count(vni)) change_.removed_networks.push_back(vni);
  }

  // The current owner of a port or address keeps it in the result (not removed, not upserted:
  // upserted endpoints are checked against each other).
  bool keeps(const std::string& owner, const std::string& id) const {
    return !owner.empty() && owner != id && !gone_endpoints_.count(owner) && !last_endpoint_.count(owner);
  }

  void endpoints(const v1::Tables& up) {
    std::unordered_map<std::string, int> ids;
    std::unordered_map<std::uint16_t, int> ports;       // upserted endpoints of the result
    std::unordered_map<std::uint64_t, int> addrs;
    for (int i = 0; i < up.endpoints_size(); ++i) {
      const auto& ep = up.endpoints(i);
      if (!counts(last_endpoint_, ep.id(), i) || gone_endpoints_.count(ep.id())) continue;
      const std::string where = at("endpoints", i) + " (id " + quoted(ep.id()) + ")";
      bool ok = true;
      if (ep.id().empty()) {
        errors_.add(where + ": id is empty");
        ok = false;
      } else if (auto [it, fresh] = ids.emplace(ep.id(), i); !fresh) {
        errors_.add(where + ": id already used by " + at("endpoints", it->second));
        ok = false;
      }
      std::uint32_t gateway = 0;
      const bool net = check_network_ref(ep.vni(), where, &gateway);
      auto ip = parse_ipv4(ep.ip());
      if (!ip || !usable_host(*ip)) {
        errors_.add(where + ": ip " + quoted(ep.ip()) + " is not a unicast IPv4 address");
        ok = false;
      }
      auto mac = parse_mac(ep.mac());
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
          errors_.add(where + ": iface " + quoted(ep.iface()) + " maps to port " + std::to_string(*port) +
                      ", which is the uplink or out of range");
          ok = false;
        } else if (auto [it, fresh] = ports.emplace(*port, i); !fresh) {
          errors_.add(where + ": iface " + quoted(ep.iface()) + " (port " + std::to_string(*port) +
                      ") already carries " + at("endpoints", it->second));
          ok = false;
        } else if (const std::string& owner = t_.port_owner_[*port]; keeps(owner, ep.id())) {
          errors_.add(where + ": iface " + quoted(ep.iface()) + " (port " + std::to_string(*port) +
                      ") already carries endpoint " + quoted(owner));
          ok = false;
        }
      } else {
        ok = false;
      }
      if (ep.identity() > 0xffff) {
        errors_.add(where + ": identity " + std::to_string(ep.identity()) +
                    " is out of range (0..65535, the 16 bits of VXLAN-GBP's Group Policy ID)");
        ok = false;
      }
      if (!ok || !net) continue;
      if (*ip == gateway) {
        errors_.add(where + ": ip " + ep.ip() + " is the gateway of vni " + std::to_string(ep.vni()));
        continue;
      }
      const std::uint64_t addr = addr_id(ep.vni(), *ip);
      bool taken = !addrs.emplace(addr, i).second;
      if (!taken)
        if (auto it = t_.endpoint_by_addr_.find(addr); it != t_.endpoint_by_addr_.end()) taken = keeps(it->second, ep.id());
      if (taken) {
        errors_.add(where + ": ip " + ep.ip() + " already used by another endpoint in vni " + std::to_string(ep.vni()));
        continue;
      }
      EndpointSpec s{ep.id(), ep.vni(), *ip, *mac, ep.iface(), *port, static_cast<std::uint16_t>(ep.identity())};
      if (auto it = t_.endpoint_state_.find(s.id); it != t_.endpoint_state_.end()) {
        const auto& cur = it->second;
        if (cur.vni == s.vni && cur.ip_be == s.ip_be && cur.mac == s.mac && cur.iface == s.iface && cur.port == s.port &&
            cur.identity == s.identity)
          continue;  // unchanged
      }
      change_.endpoints.push_back(std::move(s));
    }
    for (const std::string& id : gone_endpoints_)
      if (t_.endpoint_state_.count(id)) change_.removed_endpoints.push_back(id);
  }

  // Is the route in force the same as `s` (same next hops and weights)?
  bool route_unchanged(const RouteSpec& s) const {
    const auto group = current_route(route_id(s.vni, s.prefix));
    if (!group) return false;
    const auto& hops = t_.group_state_[*group].hops;
    if (hops.size() != s.hops.size()) return false;
    for (std::size_t h = 0; h < hops.size(); ++h)
      if (t_.vteps_[hops[h].vtep].ip_be != s.hops[h].ip_be || hops[h].weight != s.hops[h].weight) return false;
    return true;
  }

  bool check_vtep(const std::string& text, const std::string& where, std::uint32_t* ip_be) {
    auto ip = parse_ipv4(text);
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

  void routes(const v1::Tables& up) {
    std::unordered_map<std::uint64_t, int> seen;
    for (int i = 0; i < up.routes_size(); ++i) {
      const auto& r = up.routes(i);
      std::string why;
      const auto prefix = parse_prefix(r.prefix(), &why);
      const bool keyed = prefix && r.vni() <= kMaxVniValue;
      const std::uint64_t key = keyed ? route_id(r.vni(), *prefix) : 0;
      if (keyed && (!counts(last_route_, key, i) || gone_routes_.count(key))) continue;
      if (gone_networks_.count(r.vni())) continue;  // removed with its network, whatever its prefix
      const std::string where = at("routes", i) + " (vni " + std::to_string(r.vni()) + ", prefix " + quoted(r.prefix()) + ")";
      bool ok = check_network_ref(r.vni(), where);
      if (!prefix) {
        errors_.add(where + ": prefix: " + why);
        ok = false;
      }
      if (r.next_hops_size() == 0) {
        errors_.add(where + ": next_hops is empty");
        ok = false;
      } else if (r.next_hops_size() > kMaxNextHops) {
        errors_.add(where + ": " + std::to_string(r.next_hops_size()) + " next_hops, at most " + std::to_string(kMaxNextHops));
        ok = false;
      }
      RouteSpec s;
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
        s.hops.push_back(HopSpec{ip, nh.weight()});
      }
      if (!ok) continue;
      if (auto [it, fresh] = seen.emplace(key, i); !fresh) {
        errors_.add(where + ": same vni and prefix as " + at("routes", it->second));
        continue;
      }
      s.vni = r.vni();
      s.prefix = *prefix;
      std::sort(s.hops.begin(), s.hops.end(), [](const HopSpec& a, const HopSpec& b) { return a.ip_be < b.ip_be; });
      if (route_unchanged(s)) continue;
      change_.routes.push_back(std::move(s));
    }
    for (std::uint64_t key : gone_routes_)
      if (current_route(key))
        change_.removed_routes.emplace_back(static_cast<std::uint32_t>(key >> 40),
                                            Prefix{static_cast<std::uint32_t>(key >> 8), static_cast<std::uint8_t>(key)});
  }

  void vteps(const v1::Tables& up) {
    std::unordered_map<std::uint32_t, int> seen;
    std::unordered_set<std::uint32_t> upserted;
    auto without_gone = [&](std::vector<std::uint32_t> vnis) {
      std::erase_if(vnis, [&](std::uint32_t v) { return gone_networks_.count(v) != 0; });
      return vnis;
    };
    for (int i = 0; i < up.vteps_size(); ++i) {
      const auto& v = up.vteps(i);
      const auto key = parse_ipv4(v.ip());
      if (key && (!counts(last_vtep_, *key, i) || gone_vteps_.count(*key))) continue;
      const std::string where = at("vteps", i) + " (ip " + quoted(v.ip()) + ")";
      std::uint32_t ip = 0;
      if (!check_vtep(v.ip(), where + ": ip", &ip)) continue;
      if (auto [it, fresh] = seen.emplace(ip, i); !fresh) {
        errors_.add(where + ": listed twice (also " + at("vteps", it->second) + ")");
        continue;
      }
      bool ok = true;
      const std::vector<std::uint32_t> vnis = without_gone({v.vnis().begin(), v.vnis().end()});
      for (int k = 0; k < v.vnis_size(); ++k)
        if (!gone_networks_.count(v.vnis(k)) && !check_network_ref(v.vnis(k), where + ": vnis[" + std::to_string(k) + "]"))
          ok = false;
      upserted.insert(ip);
      if (!ok) continue;
      if (auto it = t_.explicit_vteps_.find(ip);
          it != t_.explicit_vteps_.end() && it->second == vnis && t_.gbp_vteps_.count(ip) == (v.gbp() ? 1u : 0u))
        continue;
      change_.vteps.push_back(VtepSpec{ip, vnis, v.gbp()});
    }
    for (const auto& [ip, vnis] : t_.explicit_vteps_) {
      if (gone_vteps_.count(ip)) {
        change_.removed_vteps.push_back(ip);
      } else if (!upserted.count(ip)) {
        auto kept = without_gone(vnis);
        if (kept != vnis) change_.vteps.push_back(VtepSpec{ip, std::move(kept), t_.gbp_vteps_.count(ip) != 0});
      }
    }
  }

  void neighbors(const v1::Tables& up) {
    std::unordered_map<std::uint32_t, int> seen;
    for (int i = 0; i < up.neighbors_size(); ++i) {
      const auto& nb = up.neighbors(i);
      const auto ip = parse_ipv4(nb.ip());
      if (ip && (!counts(last_neighbor_, *ip, i) || gone_neighbors_.count(*ip))) continue;
      const std::string where = at("neighbors", i) + " (ip " + quoted(nb.ip()) + ")";
      auto mac = parse_mac(nb.mac());
      if (!ip || !usable_host(*ip)) {
        errors_.add(where + ": ip is not a unicast IPv4 address");
        continue;
      }
      if (!mac || !is_unicast(*mac)) {
        errors_.add(where + ": mac " + quoted(nb.mac()) + " is not a unicast MAC");
        continue;
      }
      if (auto [it, fresh] = seen.emplace(*ip, i); !fresh) {
        errors_.add(where + ": listed twice (also " + at("neighbors", it->second) + ")");
        continue;
      }
      if (auto it = t_.static_neighbors_.find(*ip); it != t_.static_neighbors_.end() && it->second == *mac) continue;
      change_.neighbors.push_back(NeighborSpec{*ip, *mac});
    }
    for (std::uint32_t ip : gone_neighbors_)
      if (t_.static_neighbors_.count(ip)) change_.removed_neighbors.push_back(ip);
  }

  // ---- services ----
  static constexpr std::uint32_t kMaxServiceWeight = 65535;
  static constexpr std::uint32_t kMaxServiceTableSize = MaglevTable::kDefaultSize;

  // The (vni, address) of every endpoint of the result.
  std::unordered_map<std::uint64_t, std::string> final_endpoint_addrs(const v1::Tables& up) const {
    std::unordered_map<std::uint64_t, std::string> out;
    for (const auto& [id, e] : t_.endpoint_state_)
      if (!gone_endpoints_.count(id) && !last_endpoint_.count(id)) out[addr_id(e.vni, e.ip_be)] = id;
    for (int i = 0; i < up.endpoints_size(); ++i) {
      const auto& ep = up.endpoints(i);
      if (!counts(last_endpoint_, ep.id(), i) || gone_endpoints_.count(ep.id())) continue;
      if (auto ip = parse_ipv4(ep.ip())) out[addr_id(ep.vni(), *ip)] = ep.id();
    }
    return out;
  }

  bool service_ports(const v1::Service& sv, const std::string& where, std::vector<ServicePortEntry>* out,
                     std::vector<std::uint16_t>* given) {
    bool ok = true;
    if (sv.ports_size() == 0) {
      errors_.add(where + ": ports is empty (a service serves at least one protocol and port)");
      return false;
    }
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> seen;
    for (int k = 0; k < sv.ports_size(); ++k) {
      const auto& p = sv.ports(k);
      const std::string pwhere = where + ": ports[" + std::to_string(k) + "]";
      if (p.protocol() != wire::kIpProtoTcp && p.protocol() != wire::kIpProtoUdp) {
        errors_.add(pwhere + ".protocol: must be 6 (TCP) or 17 (UDP) (got " + std::to_string(p.protocol()) + ")");
        ok = false;
        continue;
      }
      if (p.port() < 1 || p.port() > 65535) {
        errors_.add(pwhere + ".port: must be 1..65535 (got " + std::to_string(p.port()) + ")");
        ok = false;
        continue;
      }
      if (p.target_port() > 65535) {
        errors_.add(pwhere + ".target_port: must be 1..65535, or 0 for the port (got " + std::to_string(p.target_port()) + ")");
        ok = false;
        continue;
      }
      if (auto [it, fresh] = seen.emplace(std::make_pair(p.protocol(), p.port()), k); !fresh) {
        errors_.add(pwhere + ": protocol " + std::to_string(p.protocol()) + " port " + std::to_string(p.port()) +
                    " listed twice (also ports[" + std::to_string(it->second) + "])");
        ok = false;
        continue;
      }
      const std::uint32_t target = p.target_port() == 0 ? p.port() : p.target_port();
      given->push_back(static_cast<std::uint16_t>(p.target_port()));
      out->push_back(ServicePortEntry{static_cast<std::uint8_t>(p.protocol()), wire::to_be16(static_cast<std::uint16_t>(p.port())),
                                      wire::to_be16(static_cast<std::uint16_t>(target))});
    }
    return ok;
  }

  bool service_backends(const v1::Service& sv, const std::string& where, std::vector<ServiceBackendWeight>* out) {
    if (sv.backends_size() > static_cast<int>(kMaxServiceBackends)) {
      errors_.add(where + ": " + std::to_string(sv.backends_size()) + " backends, at most " + std::to_string(kMaxServiceBackends));
      return false;
    }
    bool ok = true;
    std::unordered_map<std::uint32_t, int> seen;
    for (int k = 0; k < sv.backends_size(); ++k) {
      const auto& b = sv.backends(k);
      const std::string bwhere = where + ": backends[" + std::to_string(k) + "]";
      auto ip = parse_ipv4(b.ip());
      if (!ip || !usable_host(*ip)) {
        errors_.add(bwhere + ".ip: " + quoted(b.ip()) + " is not a unicast IPv4 address");
        ok = false;
        continue;
      }
      if (b.weight() > kMaxServiceWeight) {
        errors_.add(bwhere + ".weight: must be 0..65535 (got " + std::to_string(b.weight()) + ")");
        ok = false;
        continue;
      }
      if (auto [it, fresh] = seen.emplace(*ip, k); !fresh) {
        errors_.add(bwhere + ".ip: " + b.ip() + " listed twice (also backends[" + std::to_string(it->second) + "])");
        ok = false;
        continue;
      }
      out->push_back(ServiceBackendWeight{*ip, b.weight()});
    }
    std::sort(out->begin(), out->end(), [](const ServiceBackendWeight& a, const ServiceBackendWeight& b) {
      return ntohl(a.ip_be) < ntohl(b.ip_be);
    });
    return ok;
  }

  static bool is_prime(std::uint32_t n) {
    if (n < 2) return false;
    for (std::uint32_t d = 2; d * d <= n; ++d)
      if (n % d == 0) return false;
    return true;
  }

  void services(const v1::Tables& up) {
    std::unordered_map<std::string, int> ids;
    std::unordered_map<std::uint64_t, std::string> vips;  // (vni, vip) of the result -> where
    const auto endpoint_addrs = final_endpoint_addrs(up);
    std::set<std::string> upserted;
    for (int i = 0; i < up.services_size(); ++i) {
      const auto& sv = up.services(i);
      if (!counts(last_service_, sv.id(), i) || gone_services_.count(sv.id())) continue;
      upserted.insert(sv.id());
      const std::string where = at("services", i) + " (id " + quoted(sv.id()) + ")";
      bool ok = true;
      if (sv.id().empty()) {
        errors_.add(where + ": id is empty");
        ok = false;
      } else if (auto [it, fresh] = ids.emplace(sv.id(), i); !fresh) {
        errors_.add(where + ": id already used by " + at("services", it->second));
        ok = false;
      }
      std::uint32_t gateway = 0;
      const bool net = check_network_ref(sv.vni(), where, &gateway);
      auto vip = parse_ipv4(sv.vip());
      if (!vip || !usable_host(*vip)) {
        errors_.add(where + ": vip: " + quoted(sv.vip()) + " is not a unicast IPv4 address");
        ok = false;
      }
      ServiceSpec spec;
      if (!service_ports(sv, where, &spec.ports, &spec.target_ports_given)) ok = false;
      if (!service_backends(sv, where, &spec.backends)) ok = false;
      std::size_t weighted = 0;
      for (const auto& b : spec.backends) weighted += b.weight != 0;
      spec.table_size = sv.table_size() == 0 ? default_service_table_size(spec.backends.size()) : sv.table_size();
      if (sv.table_size() != 0 && (sv.table_size() < 3 || sv.table_size() > kMaxServiceTableSize || !is_prime(sv.table_size()))) {
        errors_.add(where + ": table_size: must be a prime in 3.." + std::to_string(kMaxServiceTableSize) +
                    ", or 0 for the default (got " + std::to_string(sv.table_size()) + ")");
        ok = false;
      } else if (weighted > spec.table_size) {
        errors_.add(where + ": table_size: " + std::to_string(spec.table_size) + " slots cannot hold " +
                    std::to_string(weighted) + " backends with a weight (choose a larger prime, or 0)");
        ok = false;
      }
      if (!ok || !net) continue;
      if (*vip == gateway) {
        errors_.add(where + ": vip: " + sv.vip() + " is the gateway of vni " + std::to_string(sv.vni()));
        continue;
      }
      if (auto it = endpoint_addrs.find(addr_id(sv.vni(), *vip)); it != endpoint_addrs.end()) {
        errors_.add(where + ": vip: " + sv.vip() + " is the ip of endpoint " + quoted(it->second) + " in vni " +
                    std::to_string(sv.vni()));
        continue;
      }
      if (auto [it, fresh] = vips.emplace(addr_id(sv.vni(), *vip), where); !fresh) {
        errors_.add(where + ": vip: " + sv.vip() + " already used in vni " + std::to_string(sv.vni()) + " by " + it->second);
        continue;
      }
      spec.id = sv.id();
      spec.vni = sv.vni();
      spec.vip_be = *vip;
      spec.table_size_given = sv.table_size();
      if (auto it = t_.service_state_.find(spec.id); it != t_.service_state_.end()) {
        const auto& cur = it->second;
        if (cur.vni == spec.vni && cur.vip_be == spec.vip_be && cur.ports == spec.ports && cur.backends == spec.backends &&
            cur.target_ports_given == spec.target_ports_given &&
            cur.table_size_given == spec.table_size_given)
          continue;  // unchanged
      }
      change_.services.push_back(std::move(spec));
    }
    // Services that stay as they are: their VIPs against the upserted ones and the endpoints.
    for (const auto& [id, st] : t_.service_state_) {
      if (gone_services_.count(id) || upserted.count(id)) continue;
      const std::string where = "service " + quoted(id);
      if (auto [it, fresh] = vips.emplace(addr_id(st.vni, st.vip_be), where); !fresh)
        errors_.add(it->second + ": vip: " + ipv4_text(st.vip_be) + " already used in vni " + std::to_string(st.vni) + " by " + where);
      if (auto it = endpoint_addrs.find(addr_id(st.vni, st.vip_be)); it != endpoint_addrs.end())
        errors_.add("endpoint " + quoted(it->second) + ": ip " + ipv4_text(st.vip_be) + " is the vip of " + where +
                    " in vni " + std::to_string(st.vni));
      std::uint32_t gateway = 0;
      if (final_network(st.vni, &gateway) == NetworkIs::present && gateway == st.vip_be)
        errors_.add("vni " + std::to_string(st.vni) + ": gateway_ip " + ipv4_text(gateway) + " is the vip of " + where);
    }
    for (const std::string& id : gone_services_)
      if (t_.service_state_.count(id)) change_.removed_services.push_back(id);
  }

  // A network whose gateway moved onto the address of one of its endpoints that stays.
  void gateways_against_endpoints(const v1::Tables& up) {
    (void)up;
    for (std::uint32_t vni : gateway_changed_) {
      const std::uint32_t gw = final_specs_[vni].gateway_ip_be;
      auto it = t_.endpoint_by_addr_.find(addr_id(vni, gw));
      if (it != t_.endpoint_by_addr_.end() && keeps(it->second, ""))
        errors_.add(network_where_[vni] + ": gateway_ip " + ipv4_text(gw) + " is the ip of endpoint " + quoted(it->second));
    }
  }

  // ---- network policies (policy_entry.hpp): checked and converted whole per network ----
  void policies(const v1::Tables& up) {
    std::unordered_map<std::uint32_t, int> first;  // a Snapshot's duplicates
    for (int i = 0; i < up.policies_size(); ++i) {
      const auto& p = up.policies(i);
      if (!counts(last_policy_, p.vni(), i) || gone_policies_.count(p.vni())) continue;
      const std::string where = at("policies", i) + " (vni " + std::to_string(p.vni()) + ")";
      if (snapshot_) {
        auto [it, fresh] = first.emplace(p.vni(), i);
        if (!fresh) {
          errors_.add(where + ": vni already used by " + at("policies", it->second));
          continue;
        }
      }
      if (!check_network_ref(p.vni(), where)) continue;
      auto spec = convert_network_policy(p, where);
      if (!spec) {
        errors_.add(spec.error());
        continue;
      }
      change_.policies.push_back(std::move(*spec));
    }
    for (std::uint32_t vni : gone_policies_)
      if (t_.policy_state_.count(vni)) change_.removed_policies.push_back(vni);
  }

  // Everything the change takes from a table of fixed size must be there before anything is
  // changed: the writer cannot fail half-way.
  void capacity() {
    // Networks and their VNI counter slots (never recycled).
    std::size_t networks = t_.network_state_by_vni_.size() - change_.removed_networks.size();
    std::size_t new_counter_slots = 0, new_network_ids = 0;
    for (const auto& n : change_.networks) {
      if (t_.network_state_by_vni_.count(n.vni)) continue;
      ++networks;
      ++new_network_ids;
      if (!ctx_.vni_slots->find(n.vni)) ++new_counter_slots;
    }
    if (networks > kMaxNetworks) errors_.add("networks: " + std::to_string(networks) + " networks, at most " + std::to_string(kMaxNetworks));
    if (ctx_.vni_slots->all().size() + new_counter_slots > kMaxVniSlots)
      errors_.add("networks: no VNI counter slot left (" + std::to_string(kMaxVniSlots) +
                  " distinct VNIs used since start); restart the dataplane to reclaim");
    need(t_.network_ids_, new_network_ids, "networks");
    // VTEPs (each with a neighbour cache slot, never recycled) and static neighbours.
    std::unordered_set<std::uint32_t> new_vteps, new_slots;
    auto vtep = [&](std::uint32_t ip) {
      if (!t_.vtep_index_.contains(ip)) new_vteps.insert(ip);
      if (!ctx_.neighbors->find_slot(ip)) new_slots.insert(ip);
    };
    std::size_t new_routes = 0, long_prefixes = 0;
    std::array<std::uint32_t, BlockPool::kClasses> blocks{};
    for (const auto& r : change_.routes) {
      for (const auto& h : r.hops) vtep(h.ip_be);
      ++new_routes;
      if (r.prefix.len > 24) ++long_prefixes;
      ++blocks[BlockPool::size_class(ecmp_slot_count(r.hops))];
    }
    for (const auto& v : change_.vteps) vtep(v.ip_be);
    for (const auto& n : change_.neighbors)
      if (!ctx_.neighbors->find_slot(n.ip_be)) new_slots.insert(n.ip_be);
    if (snapshot_)
      for (const auto& [ip, mac] : ctx_.default_neighbors)
        if (!ctx_.neighbors->find_slot(ip)) new_slots.insert(ip);
    if (ctx_.neighbors->size() + new_slots.size() > ctx_.neighbors->capacity())
      errors_.add("vteps: neighbour cache full: " + std::to_string(ctx_.neighbors->capacity()) +
                  " VTEP addresses seen since start, " + std::to_string(new_slots.size()) + " more needed");
    need(t_.vtep_ids_, new_vteps.size(), "vteps");
    // Prefixes, groups, slot blocks, second-level LPM groups, endpoint slots: upper bounds.
    need(t_.prefix_id_pool_, new_routes + change_.endpoints.size(), "routes: prefixes");
    need(t_.group_ids_, new_routes, "routes: next-hop groups");
    need(t_.endpoint_slot_ids_, change_.endpoints.size(), "endpoints");
    if (!t_.slot_blocks_.can_alloc(blocks)) errors_.add("routes: next-hop slots exhausted");
    long_prefixes += change_.endpoints.size();  // a /32 each
    std::size_t services = t_.service_state_.size() - change_.removed_services.size();
    for (const auto& sv : change_.services) services += !t_.service_state_.count(sv.id);
    if (services > kMaxServices)
      errors_.add("services: " + std::to_string(services) + " services, at most " + std::to_string(kMaxServices));
    if (long_prefixes > t_.lpm_.groups_available())
      errors_.add("routes: out of second-level LPM groups (" + std::to_string(LpmTable::kMaxGroups) +
                  " /24 blocks holding prefixes longer than /24)");
  }

  void need(const IndexPool& pool, std::size_t n, const char* what) {
    if (n <= pool.available()) return;
    if (n <= pool.available_after_grace()) {
      change_.needs_reclaim_first = true;
      return;
    }
    errors_.add(std::string(what) + ": table full (" + std::to_string(n) + " more needed, " +
                std::to_string(pool.available_after_grace()) + " left)");
  }

  const ForwardingTables& t_;
  const BuildContext& ctx_;
  const bool snapshot_;
  const std::string list_;
  const v1::Tables* up_ = nullptr;
  Errors errors_;
  TablesChange change_;
  std::unordered_map<std::uint32_t, int> last_network_;
  std::unordered_map<std::string, int> last_endpoint_;
  std::unordered_map<std::uint64_t, int> last_route_;
  std::unordered_map<std::uint32_t, int> last_vtep_, last_neighbor_;
  std::unordered_map<std::string, int> last_service_;
  std::set<std::string> gone_services_, cascaded_services_;
  std::unordered_map<std::uint32_t, int> last_policy_;
  std::set<std::uint32_t> gone_policies_, cascaded_policies_;
  std::set<std::uint32_t> gone_networks_;
  std::set<std::string> gone_endpoints_, cascaded_endpoints_;
  std::set<std::uint64_t> gone_routes_, cascaded_routes_;
  std::set<std::uint32_t> gone_vteps_, gone_neighbors_;
  std::unordered_set<std::uint32_t> invalid_vnis_;
  std::map<std::uint32_t, NetworkSpec> final_specs_;  // upserted networks of the result
  std::map<std::uint32_t, std::string> network_where_;
  std::vector<std::uint32_t> gateway_changed_;
};

Result<TablesChange> plan_snapshot(const ForwardingTables& tables, const v1::Tables& in, const BuildContext& context) {
  return TablesPlanner(tables, context, true).plan(in, nullptr);
}

Result<TablesChange> plan_delta(const ForwardingTables& tables, const v1::Delta& delta, const BuildContext& context) {
  return TablesPlanner(tables, context, false).plan(delta.upsert(), &delta);
}

}  // namespace vxfed::dataplane
