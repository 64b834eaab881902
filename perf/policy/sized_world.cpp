#include "perf/policy/sized_world.hpp"

#include <random>

namespace vxfed::perf {

namespace {

using namespace vxfed::policy;

const std::vector<std::string> kApps = {"web", "api", "worker", "db", "cache", "queue", "auth", "search", "frontend",
                                        "metrics", "batch", "gateway"};

std::string cluster_name(int c) { return "cluster-" + std::string(1, static_cast<char>('a' + c)); }
std::string namespace_name(int n) { return "ns-" + std::to_string(n); }
std::string app_of(int workload) { return kApps[static_cast<std::size_t>(workload) % kApps.size()]; }

LabelSelector labels_selector(Labels l) { return LabelSelector{std::move(l), {}}; }

Port tcp(std::uint16_t port, std::optional<std::uint16_t> end = std::nullopt) {
  return Port{Protocol::Tcp, port, end};
}

Peer pods(Labels l) { return Peer{labels_selector(std::move(l)), std::nullopt, std::nullopt}; }
Peer namespaces(Labels l) { return Peer{std::nullopt, labels_selector(std::move(l)), std::nullopt}; }
Peer both(Labels pod, Labels ns) { return Peer{labels_selector(std::move(pod)), labels_selector(std::move(ns)), std::nullopt}; }
Peer block(const char* cidr, std::vector<const char*> except) {
  IpBlock b{*net::Ipv4Prefix::parse(cidr), {}};
  for (const char* e : except) b.except.push_back(*net::Ipv4Prefix::parse(e));
  return Peer{std::nullopt, std::nullopt, b};
}

// The policies of a namespace come in twenty kinds, cycled; `index` picks the kind and, with
// the seed, its details.
Policy policy_of(const std::string& cluster, int ns_index, int index, std::mt19937_64& rng) {
  const std::string ns = namespace_name(ns_index);
  Policy p;
  p.cluster = cluster;
  p.namespace_name = ns;
  p.name = "policy-" + std::to_string(index);
  p.policy_for = {NadRef{ns, kBenchNetwork}};
  const int kind = index % 20;
  const int workload = static_cast<int>(rng() % 10);
  const std::string app = app_of(workload);
  const auto team = "team-" + std::to_string(rng() % 40);
  switch (kind) {
    case 0:  // default deny ingress
      p.ingress_type = true;
      break;
    case 1:  // default deny egress, but DNS to the cluster's DNS pods
      p.egress_type = true;
      p.egress.push_back(Rule{{both({{"app.kubernetes.io/name", "dns"}}, {{"kubernetes.io/metadata.name", "ns-0"}})},
                              {Port{Protocol::Udp, 53, std::nullopt}, tcp(53)}});
      break;
    case 12: case 13: case 14:  // another team's clients, AND-ed with a role, on a port range
      p.pod_selector = labels_selector({{"app.kubernetes.io/name", app}});
      p.ingress_type = true;
      p.ingress.push_back(Rule{{both({{"role", "client"}}, {{"team", team}})}, {tcp(8000, 8100)}});
      break;
    case 15:  // monitoring scrapes from every namespace of the platform team
      p.ingress_type = true;
      p.ingress.push_back(Rule{{namespaces({{"team", "team-0"}}), namespaces({{"env", "prod"}})}, {tcp(9090)}});
      break;
    case 16:  // from the load balancers, less one subnet
      p.pod_selector = labels_selector({{"app.kubernetes.io/name", "gateway"}});
      p.ingress_type = true;
      p.ingress.push_back(Rule{{block("192.168.0.0/16", {"192.168.10.0/24", "192.168.99.0/24"})}, {tcp(443), tcp(80)}});
      break;
    case 17:  // out to the internet on HTTPS, not to the private ranges
      p.pod_selector = labels_selector({{"app.kubernetes.io/name", app}});
      p.egress_type = true;
      p.egress.push_back(Rule{{block("0.0.0.0/0", {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"})}, {tcp(443)}});
      break;
    case 18:  // to the namespace's database and cache, TCP and a UDP range
      p.pod_selector = labels_selector({{"app.kubernetes.io/name", app}});
      p.egress_type = true;
      p.ingress_type = true;
      p.egress.push_back(Rule{{pods({{"app.kubernetes.io/name", "db"}}), pods({{"app.kubernetes.io/name", "cache"}})},
                              {tcp(5432), tcp(6379), Port{Protocol::Udp, 7000, 7100}}});
      p.ingress.push_back(Rule{{pods({})}, {}});  // everything from its own namespace
      break;
    case 19: {  // from every pod without a role, by expression; every protocol
      p.pod_selector = labels_selector({{"app.kubernetes.io/name", app}});
      p.ingress_type = true;
      Peer peer;
      peer.pod_selector = LabelSelector{{}, {Requirement{"role", Operator::DoesNotExist, {}}}};
      peer.namespace_selector = LabelSelector{{}, {Requirement{"env", Operator::In, {"prod", "staging"}}}};
      p.ingress.push_back(Rule{{peer}, {}});
      break;
    }
    default: {  // 2..11: a workload takes its callers of the same namespace on its port
      const int w = kind - 2;
      p.pod_selector = labels_selector({{"app.kubernetes.io/name", app_of(w)}});
      p.ingress_type = true;
      p.ingress.push_back(Rule{{pods({{"app.kubernetes.io/name", app_of(w + 1)}}),
                                pods({{"app.kubernetes.io/name", app_of(w + 2)}, {"role", "client"}})},
                               {tcp(static_cast<std::uint16_t>(8080 + w))}});
      if (rng() % 4 == 0)  // and, now and then, the monitoring namespace on its metrics port
        p.ingress.push_back(Rule{{namespaces({{"kubernetes.io/metadata.name", "ns-1"}})}, {tcp(9100)}});
    }
  }
  return p;
}

}  // namespace

SizedWorld make_world(const WorldSize& size, std::uint64_t seed, const std::function<void(const Pod&, const Namespace&)>& each_pod) {
  std::mt19937_64 rng(seed);
  SizedWorld w;
  for (int c = 0; c < size.clusters; ++c) {
    for (int n = 0; n < size.namespaces; ++n) {
      // Three labels besides the name label, as docs/policy.md's sizing namespace.
      w.namespaces.push_back(Namespace{cluster_name(c), namespace_name(n),
                                       {{"team", "team-" + std::to_string(n % 40)},
                                        {"env", n % 3 == 0 ? "prod" : n % 3 == 1 ? "staging" : "dev"},
                                        {"cost-center", "cc-" + std::to_string(n % 25)}},
                                       {}});
    }
  }
  const int per_namespace = size.pods / (size.clusters * size.namespaces);
  const int replicas = std::max(1, per_namespace / size.workloads);
  for (const Namespace& ns : w.namespaces) {
    const int ns_index = std::stoi(ns.name.substr(3));
    for (int wl = 0; wl < size.workloads; ++wl) {
      const bool statefulset = wl >= size.workloads - size.statefulsets && ns_index % size.statefulset_every == 0;
      const std::string app = app_of(wl);
      for (int r = 0; r < replicas; ++r) {
        Pod p;
        p.cluster = ns.cluster;
        p.namespace_name = ns.name;
        p.name = app + "-" + std::to_string(r);
        // The six labels Helm charts and Deployments set, plus the per-rollout hash (left out
        // of the identity: two rollouts live, as during an upgrade).
        p.labels = {{"app.kubernetes.io/name", app},
                    {"app.kubernetes.io/instance", ns.name + "-" + app},
                    {"app.kubernetes.io/component", wl % 2 ? "backend" : "frontend"},
                    {"app.kubernetes.io/part-of", "shop"},
                    {"app.kubernetes.io/managed-by", "Helm"},
                    {"role", wl % 3 == 0 ? "client" : "server"}};
        if (statefulset) p.labels["statefulset.kubernetes.io/pod-name"] = p.name;
        else p.labels["pod-template-hash"] = (rng() % 2) ? "7d4b9c" : "5f6a7b";
        each_pod(p, ns);
      }
    }
  }
  const int per_ns_policies = size.policies / (size.clusters * size.namespaces);
  int index = 0;
  for (int c = 0; c < size.clusters; ++c)
    for (int n = 0; n < size.namespaces; ++n)
      for (int i = 0; i < per_ns_policies; ++i) w.policies.push_back(policy_of(cluster_name(c), n, index++, rng));
  return w;
}

Policy make_policy(const std::string& cluster, const std::string& ns, int index, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return policy_of(cluster, std::stoi(ns.substr(3)), index, rng);
}

}  // namespace vxfed::perf
