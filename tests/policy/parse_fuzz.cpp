// Fuzz target (suite 'fuzz'): read_objects() on any bytes, then compile() and allowed() on
// whatever it accepts. Beyond not crashing it checks two promises of policy/: an accepted
// input has objects and a refused one only "SOURCE: ..." lines; and an unlabelled pod is never
// allowed more than the same pod with its labels, as the local pod or as the peer
// (docs/policy.md, "Before a pod's labels arrive").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "policy/compile.hpp"
#include "policy/parse.hpp"

using namespace vxfed::policy;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Parsed parsed = read_objects(text, "a", "f");
  if (!parsed.errors.empty()) {
    for (const auto& e : parsed.errors) require(e.rfind("f: ", 0) == 0);
    return 0;
  }
  const Objects& o = parsed.objects;
  require(!o.policies.empty() || !o.namespaces.empty() || !o.pods.empty());

  std::set<std::string> networks;
  for (const auto& p : o.policies)
    for (const auto& nad : p.policy_for)
      if (networks.size() < 4) networks.insert(nad.name);
  // Every pair of the first four pods, each in turn the local pod and the peer.
  std::vector<const Pod*> pods;
  for (const Pod& pod : o.pods)
    if (pods.size() < 4) pods.push_back(&pod);
  for (const Pod* local : pods) {
    const Identity labelled = identity_of(*local, nullptr);
    const Identity unlabelled = Identity::make_unlabelled(local->cluster, local->namespace_name);
    for (const Pod* other : pods) {
      const Identity other_labelled = identity_of(*other, nullptr);
      const PeerRef peer{other_labelled, std::nullopt};
      const PeerRef peer_unlabelled{Identity::make_unlabelled(other->cluster, other->namespace_name), std::nullopt};
      for (const auto& network : networks)
        for (const Direction d : {Direction::Ingress, Direction::Egress})
          for (const std::uint8_t proto : {std::uint8_t{6}, std::uint8_t{17}, std::uint8_t{1}}) {
            // As the local pod.
            if (allowed(d, unlabelled, network, o.policies, peer, proto, 80))
              require(allowed(d, labelled, network, o.policies, peer, proto, 80));
            // As the peer.
            if (allowed(d, labelled, network, o.policies, peer_unlabelled, proto, 80))
              require(allowed(d, labelled, network, o.policies, peer, proto, 80));
          }
    }
  }
  return 0;
}
