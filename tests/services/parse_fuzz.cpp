// Fuzz target (suite 'fuzz'): read_objects() on any bytes, then validate(), federate() and the
// strategies on whatever is accepted. Beyond not crashing it checks the promises of services/:
// a refused input has only "SOURCE: ..." lines; an accepted and valid apply always merges;
// every backend a strategy allows is ready and of a cluster the strategy permits (LocalFirst:
// the caller's while it has one; FailoverOnly: one cluster of the order, the first that has
// one); and the Maglev table only ever picks an allowed backend.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "services/parse.hpp"
#include "services/select.hpp"
#include "services/validate.hpp"

using namespace vxfed::services;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

const FederationView& federation() {
  static const FederationView view = [] {
    FederationView f;
    f.cluster_cidrs["a"] = {*vxfed::net::Ipv4Prefix::parse("10.244.0.0/16")};
    f.cluster_cidrs["b"] = {*vxfed::net::Ipv4Prefix::parse("10.245.0.0/16")};
    f.service_range = *vxfed::net::Ipv4Prefix::parse("10.100.0.0/24");
    return f;
  }();
  return view;
}

void check_strategy(const FederatedService& s, const std::string& caller) {
  const auto allowed = allowed_backends(s, caller);
  std::set<std::string> clusters;
  bool caller_has_ready = false;
  for (const Backend& b : s.backends) caller_has_ready = caller_has_ready || (b.ready && b.cluster == caller);
  for (const WeightedBackend& w : allowed) {
    require(w.backend < s.backends.size() && w.weight > 0);
    require(s.backends[w.backend].ready);
    clusters.insert(s.backends[w.backend].cluster);
  }
  if (s.strategy.strategy == Strategy::LocalFirst && caller_has_ready)
    require(clusters == std::set<std::string>{caller});
  if (s.strategy.strategy == Strategy::FailoverOnly) {
    require(clusters.size() <= 1);
    // The first cluster of the order with a ready backend, or nothing when none has one.
    std::string first;
    for (const std::string& c : s.strategy.failover_order)
      for (const Backend& b : s.backends)
        if (first.empty() && b.ready && b.cluster == c) first = c;
    require(first.empty() ? allowed.empty() : clusters == std::set<std::string>{first});
  }
  // A small prime keeps the build cheap; the lookup must land on an allowed backend.
  auto table = ServiceTable::build(s, allowed, 251);
  require(table.ok());
  for (std::uint32_t h : {0u, 1u, 0x7fffffffu, 0xffffffffu, 0x9e3779b9u}) {
    const auto pick = table->pick(h);
    require(pick.has_value() == !allowed.empty());
    if (!pick) continue;
    bool found = false;
    for (const WeightedBackend& w : allowed) found = found || w.backend == *pick;
    require(found);
  }
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
  require(!o.services.empty() || !o.slices.empty() || !o.exports.empty());
  const auto errors = validate(o, federation(), "f");
  for (const auto& e : errors) require(e.rfind("f: ", 0) == 0);
  if (!errors.empty()) return 0;
  auto set = federate({o});
  require(set.ok());
  require(set->conditions.size() == o.exports.size());
  for (const auto& [key, s] : set->services) {
    check_strategy(s, "a");
    check_strategy(s, "b");
  }
  return 0;
}
