// Resolution of underlay next-hop MACs by ARP, on the control thread. Workers flag VTEPs they
// needed while unresolved (NeighborCache 'wanted'); new tables name VTEPs before any traffic.
// Where a VTEP is reached is the Underlay's answer (underlay.hpp):
//   - on-link: the resolver sends ARP requests for the VTEP itself on the uplink, retried with
//     exponential backoff (100 ms doubling to 5 s) until a reply arrives; the workers learn the
//     reply into the cache themselves (the pipeline learns ARP from known VTEPs);
//   - behind a router: the router is ARPed for the same way (the workers learn its replies and
//     gratuitous ARPs too: NeighborCache::set_routers) and every VTEP behind it gets the
//     router's MAC; when the router's MAC changes (a failover), its VTEPs follow within a tick.
// Routers are resolved from the start, before any tables arrive.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "dataplane/core/neighbor_cache.hpp"
#include "dataplane/runtime/underlay.hpp"

namespace vxfed::dataplane {

class ArpResolver {
 public:
  using Clock = std::chrono::steady_clock;
  // send(target_ip_be): emits one ARP request; false when no mbuf or queue space.
  using Sender = std::function<bool(std::uint32_t target_ip_be)>;

  // Gives the routers their cache slots and makes them learnable by the workers: call before
  // the workers start.
  static Result<std::unique_ptr<ArpResolver>> create(NeighborCache& cache, Underlay underlay, Sender send);

  // Starts resolving these VTEPs (network order) now, if not resolved.
  void watch(const std::vector<std::uint32_t>& vteps);
  // Collects wanted slots, follows router MACs, sends due requests. Call every few ms.
  void tick(Clock::time_point now);

  std::uint64_t requests_sent() const { return requests_sent_; }
  std::size_t pending() const { return pending_.size(); }

 private:
  ArpResolver(NeighborCache& cache, Underlay underlay, Sender send)
      : cache_(cache), underlay_(std::move(underlay)), send_(std::move(send)) {}
  struct Pending {
    Clock::time_point next{};  // a new target is due at the next tick
    std::chrono::milliseconds interval{100};
  };
  struct Router {
    std::set<std::uint32_t> vteps;  // network order
    std::uint64_t mac = 0;          // the MAC its VTEPs were given (NeighborCache word bits), 0: none yet
  };
  void place(std::uint32_t vtep_be);

  NeighborCache& cache_;
  Underlay underlay_;
  Sender send_;
  std::map<std::uint32_t, Pending> pending_;  // ARP targets: on-link VTEPs and routers
  std::map<std::uint32_t, Router> routers_;   // by router address (network order)
  std::uint64_t requests_sent_ = 0;
};

}  // namespace vxfed::dataplane
