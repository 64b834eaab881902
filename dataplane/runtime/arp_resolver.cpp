#include "dataplane/runtime/arp_resolver.hpp"

namespace vxfed::dataplane {

bool ArpResolver::on_link(std::uint32_t ip_be) const {
  if (!underlay_.gateway_be) return true;
  return underlay_.mask_be != 0 && (ip_be & underlay_.mask_be) == underlay_.subnet_be;
}

void ArpResolver::watch(const std::vector<std::uint32_t>& ips) {
  const auto now = Clock::now();
  for (const std::uint32_t ip : ips) {
    if (cache_.lookup(ip)) continue;
    pending_.emplace(ip, Pending{now, std::chrono::milliseconds(100)});
  }
}

void ArpResolver::tick(Clock::time_point now) {
  for (const std::uint32_t ip : cache_.take_wanted()) pending_.emplace(ip, Pending{now, std::chrono::milliseconds(100)});
  for (auto it = pending_.begin(); it != pending_.end();) {
    const std::uint32_t ip = it->first;
    if (cache_.lookup(ip)) {
      it = pending_.erase(it);
      continue;
    }
    if (!on_link(ip)) {
      // Off-link VTEP: its frames go to the gateway's MAC.
      if (auto gw = cache_.lookup(*underlay_.gateway_be)) {
        cache_.learn(ip, *gw);
        it = pending_.erase(it);
        continue;
      }
      if (now >= it->second.next && send_(*underlay_.gateway_be)) ++requests_sent_;
    } else if (now >= it->second.next && send_(ip)) {
      ++requests_sent_;
    }
    if (now >= it->second.next) {
      it->second.next = now + it->second.interval;
      it->second.interval = std::min(it->second.interval * 2, std::chrono::milliseconds(5000));
    }
    ++it;
  }
}

}  // namespace vxfed::dataplane
