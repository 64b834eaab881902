// Resolution of underlay next-hop MACs by ARP, on the control thread. Workers flag VTEPs they
// needed while unresolved (NeighborCache 'wanted'); new tables name VTEPs before any traffic.
// For each unresolved address the resolver sends an ARP request on the uplink and retries
// with exponential backoff (100 ms doubling to 5 s) until a reply arrives; the workers learn
// the reply into the cache themselves (the pipeline learns ARP from known VTEPs).
// VTEPs outside --underlay-subnet are reached through --underlay-gateway: they get the
// gateway's MAC (a static neighbour).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "dataplane/core/neighbor_cache.hpp"

namespace vxfed::dataplane {

class ArpResolver {
 public:
  using Clock = std::chrono::steady_clock;
  // send(target_ip_be): emits one ARP request; false when no mbuf or queue space.
  using Sender = std::function<bool(std::uint32_t target_ip_be)>;

  struct Underlay {
    std::uint32_t subnet_be = 0, mask_be = 0;  // mask 0 with no gateway: all on-link
    std::optional<std::uint32_t> gateway_be;
  };

  ArpResolver(NeighborCache& cache, Underlay underlay, Sender send)
      : cache_(cache), underlay_(underlay), send_(std::move(send)) {}

  // Starts resolving these VTEPs (network order) now, if not resolved.
  void watch(const std::vector<std::uint32_t>& ips);
  // Collects wanted slots, sends due requests. Call every few milliseconds.
  void tick(Clock::time_point now);

  std::uint64_t requests_sent() const { return requests_sent_; }
  std::size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    Clock::time_point next;
    std::chrono::milliseconds interval{100};
  };
  bool on_link(std::uint32_t ip_be) const;

  NeighborCache& cache_;
  Underlay underlay_;
  Sender send_;
  std::map<std::uint32_t, Pending> pending_;
  std::uint64_t requests_sent_ = 0;
};

}  // namespace vxfed::dataplane
