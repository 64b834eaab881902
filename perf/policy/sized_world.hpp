// A federation of the size the policy compiler must handle (docs/policy.md, "Compiled tables:
// the benchmark"), generated from a seed: namespaces with the same names in every cluster,
// workloads with the labels Helm charts and Deployments set, StatefulSets whose members each
// carry their pod name (one identity per member), and policies of the kinds users write,
// every rule kind included. Deterministic: one seed, one world.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "policy/model.hpp"

namespace vxfed::perf {

struct WorldSize {
  int clusters = 2;
  int namespaces = 250;     // names, each present in every cluster
  int pods = 100000;        // over every cluster
  int policies = 10000;     // spread evenly over every cluster's namespaces
  int workloads = 10;       // per namespace
  // The last `statefulsets` workloads of every `statefulset_every`-th namespace are StatefulSets
  // whose members carry their pod name: one identity per member. The defaults give ~6,900
  // identities; --statefulsets 6 --statefulset-every 1 brings 100,000 pods near the 16-bit ceiling.
  int statefulsets = 1;
  int statefulset_every = 5;
};

struct SizedWorld {
  std::vector<policy::Namespace> namespaces;
  std::vector<policy::Policy> policies;
};

inline const std::string kBenchNetwork = "fed-a";

// The pods are handed to `each_pod` one at a time with their namespace, in order (every namespace of the first
// cluster, then the next), and not kept: what the compiler's process holds is the identities
// made of them, as vxfedd will hold identities and not every pod of the federation.
SizedWorld make_world(const WorldSize& size, std::uint64_t seed,
                      const std::function<void(const policy::Pod&, const policy::Namespace&)>& each_pod);

// One more policy of namespace `ns` of `cluster`, as an incremental change would bring.
policy::Policy make_policy(const std::string& cluster, const std::string& ns, int index, std::uint64_t seed);

}  // namespace vxfed::perf
