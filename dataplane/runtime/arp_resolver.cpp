#include "dataplane/runtime/arp_resolver.hpp"

namespace vxfed::dataplane {

namespace {

std::uint32_t be(net::Ipv4Addr a) { return a.to_network(); }

}  // namespace

Result<std::unique_ptr<ArpResolver>> ArpResolver::create(NeighborCache& cache, Underlay underlay, Sender send) {
  std::unique_ptr<ArpResolver> r(new ArpResolver(cache, std::move(underlay), std::move(send)));
  std::vector<std::uint32_t> routers;
  for (const auto router : r->underlay_.routers()) routers.push_back(be(router));
  if (auto st = cache.set_routers(routers); !st) return make_error(st.error());
  for (const std::uint32_t router : routers) {
    r->routers_.emplace(router, Router{});
    r->pending_.emplace(router, Pending{});
  }
  return r;
}

void ArpResolver::place(std::uint32_t vtep_be) {
  const std::uint32_t hop = be(underlay_.next_hop(net::Ipv4Addr::from_network(vtep_be)));
  if (hop == vtep_be) {
    if (!cache_.lookup(vtep_be)) pending_.emplace(vtep_be, Pending{});
    return;
  }
  Router& router = routers_[hop];
  router.vteps.insert(vtep_be);
  if (router.mac != 0) {
    cache_.learn(vtep_be, wire::mac_from_u64(router.mac));
  } else {
    pending_.emplace(hop, Pending{});
  }
}

void ArpResolver::watch(const std::vector<std::uint32_t>& vteps) {
  for (const std::uint32_t vtep : vteps) place(vtep);
}

void ArpResolver::tick(Clock::time_point now) {
  for (const std::uint32_t vtep : cache_.take_wanted()) place(vtep);

  // VTEPs behind a router carry the router's MAC, also after it changed.
  for (auto& [address, router] : routers_) {
    const auto mac = cache_.lookup(address);
    if (!mac) {
      if (!router.vteps.empty() && !pending_.count(address)) pending_.emplace(address, Pending{});
      continue;
    }
    const std::uint64_t word = wire::mac_to_u64(*mac);
    if (word == router.mac) continue;
    router.mac = word;
    for (const std::uint32_t vtep : router.vteps) cache_.learn(vtep, *mac);
  }

  for (auto it = pending_.begin(); it != pending_.end();) {
    const std::uint32_t target = it->first;
    if (cache_.lookup(target)) {
      it = pending_.erase(it);
      continue;
    }
    if (now >= it->second.next) {
      if (send_(target)) ++requests_sent_;
      it->second.next = now + it->second.interval;
      it->second.interval = std::min(it->second.interval * 2, std::chrono::milliseconds(5000));
    }
    ++it;
  }
}

}  // namespace vxfed::dataplane
