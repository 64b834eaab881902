#include "services/select.hpp"

#include <algorithm>
#include <map>

namespace vxfed::services {

namespace {

std::vector<WeightedBackend> equal(const std::vector<std::uint32_t>& indices) {
  std::vector<WeightedBackend> out;
  for (std::uint32_t i : indices) out.push_back({i, 1});
  return out;
}

}  // namespace

std::vector<WeightedBackend> allowed_backends(const FederatedService& service, const std::string& caller_cluster,
                                              std::span<const bool> alive) {
  // Usable backends per cluster, in backend order.
  std::map<std::string, std::vector<std::uint32_t>> usable;
  for (std::uint32_t i = 0; i < service.backends.size(); ++i) {
    const Backend& b = service.backends[i];
    const bool is_alive = alive.empty() || (i < alive.size() && alive[i]);
    if (b.ready && is_alive) usable[b.cluster].push_back(i);
  }
  switch (service.strategy.strategy) {
    case Strategy::LocalFirst: {
      if (const auto it = usable.find(caller_cluster); it != usable.end()) return equal(it->second);
      std::vector<std::uint32_t> others;
      for (const auto& [cluster, indices] : usable) others.insert(others.end(), indices.begin(), indices.end());
      std::sort(others.begin(), others.end());
      return equal(others);
    }
    case Strategy::WeightedRoundRobin: {
      std::vector<WeightedBackend> out;
      for (const auto& [cluster, indices] : usable) {
        std::uint32_t per_backend = 1;
        if (!service.strategy.weights.empty()) {
          const auto w = service.strategy.weights.find(cluster);
          const std::uint64_t weight = w == service.strategy.weights.end() ? 0 : w->second;
          if (weight == 0) continue;
          // Rounded to the nearest unit, at least 1: exact for up to 16 backends per cluster.
          const std::uint64_t n = indices.size();
          per_backend = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (weight * kWeightUnits + n / 2) / n));
        }
        for (std::uint32_t i : indices) out.push_back({i, per_backend});
      }
      std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.backend < b.backend; });
      return out;
    }
    case Strategy::FailoverOnly:
      for (const std::string& cluster : service.strategy.failover_order)
        if (const auto it = usable.find(cluster); it != usable.end()) return equal(it->second);
      return {};
  }
  return {};
}

Result<ServiceTable> ServiceTable::build(const FederatedService& service, std::span<const WeightedBackend> allowed,
                                         std::uint32_t table_size) {
  std::vector<dataplane::MaglevBackend> backends;
  std::map<std::uint64_t, std::uint32_t> index_of_id;
  for (const WeightedBackend& w : allowed) {
    if (w.backend >= service.backends.size())
      return make_error("service " + service.key.str() + ": backend index " + std::to_string(w.backend) + " out of range");
    const std::uint64_t id = maglev_id(service.backends[w.backend]);
    backends.push_back({id, w.weight});
    index_of_id[id] = w.backend;
  }
  auto table = dataplane::MaglevTable::build(backends, table_size);
  if (!table) return make_error("service " + service.key.str() + ": " + table.error());
  ServiceTable out;
  for (const dataplane::MaglevBackend& b : table->backends()) out.backend_of_.push_back(index_of_id.at(b.id));
  out.table_ = std::move(*table);
  return out;
}

}  // namespace vxfed::services
