#include "policy/compile.hpp"

#include <algorithm>

#include "policy/selector.hpp"

namespace vxfed::policy {

namespace {

bool selector_matches(const LabelSelector& selector, const Labels& labels, bool unknown) {
  return unknown ? matches_unknown(selector) : matches(selector, labels);
}

PeerPredicate predicate_of(const Peer& peer, const Policy& policy) {
  PeerPredicate out;
  if (peer.ip_block) {
    out.kind = PeerPredicate::Kind::Cidr;
    out.block = *peer.ip_block;
    return out;
  }
  out.kind = PeerPredicate::Kind::Pods;
  if (peer.namespace_selector) out.namespace_selector = *peer.namespace_selector;
  else out.namespace_name = policy.namespace_name;  // namespace sameness: this name in every cluster
  out.pod_selector = peer.pod_selector;
  return out;
}

PortRange range_of(const Port& port) {
  PortRange out;
  out.protocol = port.protocol;
  if (port.port) {
    out.first = *port.port;
    out.last = port.end_port ? *port.end_port : *port.port;
  }
  return out;
}

void add_rules(const std::vector<Rule>& rules, const Policy& policy, DirectionRules& into) {
  const std::string name = policy.namespace_name + "/" + policy.name;
  for (const Rule& rule : rules) {
    std::vector<PeerPredicate> peers;
    for (const Peer& p : rule.peers) peers.push_back(predicate_of(p, policy));
    if (peers.empty()) peers.emplace_back();  // no from/to: every peer
    std::vector<PortRange> ports;
    for (const Port& p : rule.ports) ports.push_back(range_of(p));
    if (ports.empty()) ports.emplace_back();  // no ports: every protocol and port
    for (const auto& peer : peers)
      for (const auto& range : ports) into.allow.push_back(AllowRule{peer, range, name});
  }
}

bool port_matches(const PortRange& range, std::uint8_t ip_protocol, std::uint16_t port) {
  if (!range.protocol) return true;
  return static_cast<std::uint8_t>(*range.protocol) == ip_protocol && port >= range.first && port <= range.last;
}

}  // namespace

std::optional<std::string> nad_name_is_network(const NadRef& nad) { return nad.name; }

bool is_for_network(const Policy& policy, const std::string& network, const NadResolver& resolve) {
  return std::any_of(policy.policy_for.begin(), policy.policy_for.end(), [&](const NadRef& nad) {
    const auto n = resolve(nad);
    return n && *n == network;
  });
}

Selection selects(const Policy& policy, const Identity& pod, const std::string& network, const NadResolver& resolve) {
  if (policy.cluster != pod.cluster || policy.namespace_name != pod.namespace_name) return Selection::No;
  if (!is_for_network(policy, network, resolve)) return Selection::No;
  if (pod.unlabelled) return policy.pod_selector.empty() ? Selection::Yes : Selection::Maybe;
  return matches(policy.pod_selector, pod.pod_labels) ? Selection::Yes : Selection::No;
}

std::vector<const Policy*> policies_selecting(const std::vector<Policy>& policies, const Identity& pod,
                                              const std::string& network, const NadResolver& resolve) {
  std::vector<const Policy*> out;
  for (const Policy& p : policies)
    if (selects(p, pod, network, resolve) == Selection::Yes) out.push_back(&p);
  return out;
}

CompiledRules compile(const Identity& pod, const std::string& network, const std::vector<Policy>& policies,
                      const NadResolver& resolve) {
  std::vector<const Policy*> all;
  all.reserve(policies.size());
  for (const Policy& p : policies) all.push_back(&p);
  return compile(pod, network, all, resolve);
}

CompiledRules compile(const Identity& pod, const std::string& network, const std::vector<const Policy*>& policies,
                      const NadResolver& resolve) {
  CompiledRules out;
  for (const Policy* policy : policies) {
    const Policy& p = *policy;
    const Selection s = selects(p, pod, network, resolve);
    if (s == Selection::No) continue;
    if (p.ingress_type) {
      out.ingress.isolated = true;
      if (s == Selection::Yes) add_rules(p.ingress, p, out.ingress);
    }
    if (p.egress_type) {
      out.egress.isolated = true;
      if (s == Selection::Yes) add_rules(p.egress, p, out.egress);
    }
  }
  return out;
}

bool peer_matches(const PeerPredicate& predicate, const PeerRef& peer) {
  switch (predicate.kind) {
    case PeerPredicate::Kind::Any:
      return true;
    case PeerPredicate::Kind::Cidr: {
      if (!peer.ip || !predicate.block.cidr.contains(*peer.ip)) return false;
      return std::none_of(predicate.block.except.begin(), predicate.block.except.end(),
                          [&](const net::Ipv4Prefix& e) { return e.contains(*peer.ip); });
    }
    case PeerPredicate::Kind::Pods:
      return peer.identity && namespace_part_matches(predicate, *peer.identity) &&
             pod_part_matches(predicate, *peer.identity);
  }
  return false;
}

bool namespace_part_matches(const PeerPredicate& predicate, const Identity& id) {
  if (predicate.namespace_name) return !id.namespace_name.empty() && id.namespace_name == *predicate.namespace_name;
  return selector_matches(predicate.namespace_selector, id.namespace_labels, id.unlabelled);
}

bool pod_part_matches(const PeerPredicate& predicate, const Identity& id) {
  return !predicate.pod_selector || selector_matches(*predicate.pod_selector, id.pod_labels, id.unlabelled);
}

bool allowed(const CompiledRules& rules, Direction direction, const PeerRef& peer, std::uint8_t ip_protocol,
             std::uint16_t port) {
  const DirectionRules& d = rules.of(direction);
  if (!d.isolated) return true;
  return std::any_of(d.allow.begin(), d.allow.end(), [&](const AllowRule& r) {
    return port_matches(r.ports, ip_protocol, port) && peer_matches(r.peer, peer);
  });
}

bool allowed(Direction direction, const Identity& local, const std::string& network,
             const std::vector<Policy>& policies, const PeerRef& peer, std::uint8_t ip_protocol, std::uint16_t port,
             const NadResolver& resolve) {
  return allowed(compile(local, network, policies, resolve), direction, peer, ip_protocol, port);
}

}  // namespace vxfed::policy
