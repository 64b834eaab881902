#include "services/vip_pool.hpp"

namespace vxfed::services {

namespace {

// First and last allocatable address of a range (host order).
std::pair<std::uint32_t, std::uint32_t> bounds(const net::Ipv4Prefix& range) {
  const std::uint32_t first = range.addr;
  const std::uint32_t last = range.addr | ~range.mask();
  if (range.len >= 31) return {first, last};
  return {first + 1, last - 1};
}

}  // namespace

bool vip_allocatable(const net::Ipv4Prefix& range, net::Ipv4Addr vip) {
  const auto [first, last] = bounds(range);
  return range.contains(vip) && vip.value >= first && vip.value <= last;
}

Result<VipPool> VipPool::create(net::Ipv4Prefix range, std::uint64_t hold_down_ms) {
  if (range.len == 0) return make_error("service range: " + range.str() + " is the whole address space");
  const auto [first, last] = bounds(range);
  return VipPool(range, hold_down_ms, first, last);
}

Status VipPool::restore(const std::vector<VipRecord>& records) {
  std::map<std::uint32_t, VipRecord> by_vip;
  std::map<ServiceKey, std::uint32_t> live;
  for (const VipRecord& r : records) {
    if (!vip_allocatable(range_, r.vip))
      return make_error("VIP record " + r.vip.str() + " of " + r.service.str() + ": outside the service range " +
                        range_.str());
    if (!by_vip.emplace(r.vip.value, r).second)
      return make_error("VIP records: " + r.vip.str() + " appears twice");
    if (r.state == VipState::allocated && !live.emplace(r.service, r.vip.value).second)
      return make_error("VIP records: service " + r.service.str() + " has two VIPs");
  }
  by_vip_ = std::move(by_vip);
  live_by_service_ = std::move(live);
  return {};
}

const VipRecord* VipPool::find(const ServiceKey& service) const {
  const auto it = live_by_service_.find(service);
  return it == live_by_service_.end() ? nullptr : &by_vip_.at(it->second);
}

const VipRecord* VipPool::find(net::Ipv4Addr vip) const {
  const auto it = by_vip_.find(vip.value);
  return it == by_vip_.end() ? nullptr : &it->second;
}

const VipRecord* VipPool::find_held(const ServiceKey& service) const {
  for (const auto& [vip, r] : by_vip_)
    if (r.state == VipState::held && r.service == service) return &r;
  return nullptr;
}

Result<VipRecord> VipPool::allocate(const ServiceKey& service, std::optional<net::Ipv4Addr> pinned, std::uint64_t now_ms) {
  if (pinned && !vip_allocatable(range_, *pinned))
    return make_error("VIP " + pinned->str() + " for " + service.str() + " is outside the service range " + range_.str());
  if (const VipRecord* live = find(service)) {
    if (pinned && *pinned != live->vip)
      return make_error("service " + service.str() + " has VIP " + live->vip.str() + " already (asked for " +
                        pinned->str() + "): release it first");
    return *live;
  }
  // Its own held VIP comes back (unless it asks for another one).
  std::optional<std::uint32_t> chosen;
  if (const VipRecord* held = find_held(service); held && (!pinned || *pinned == held->vip)) chosen = held->vip.value;
  if (!chosen && pinned) {
    if (const VipRecord* other = find(*pinned))
      return make_error("VIP " + pinned->str() + " for " + service.str() + " is " +
                        (other->state == VipState::held ? "held down after release by " : "in use by ") +
                        other->service.str());
    chosen = pinned->value;
  }
  if (!chosen) {
    // Next fit from the cursor, expiring nothing: held addresses stay taken.
    const std::uint64_t n = capacity();
    for (std::uint64_t i = 0; i < n && !chosen; ++i) {
      const std::uint32_t candidate = first_ + static_cast<std::uint32_t>((cursor_ - first_ + i) % n);
      if (!by_vip_.contains(candidate)) chosen = candidate;
    }
    if (!chosen)
      return make_error("service range " + range_.str() + " is exhausted (" + std::to_string(n) +
                        " VIPs allocated or held down): no VIP for " + service.str());
    cursor_ = *chosen == last_ ? first_ : *chosen + 1;
  }
  (void)now_ms;  // allocation does not depend on time; release and expire do
  VipRecord record{net::Ipv4Addr{*chosen}, service, VipState::allocated, 0};
  by_vip_[*chosen] = record;
  live_by_service_[service] = *chosen;
  return record;
}

Result<VipRecord> VipPool::release(const ServiceKey& service, std::uint64_t now_ms) {
  const auto it = live_by_service_.find(service);
  if (it == live_by_service_.end()) return make_error("service " + service.str() + " has no VIP");
  VipRecord& r = by_vip_.at(it->second);
  r.state = VipState::held;
  r.held_until_ms = now_ms + hold_down_ms_;
  live_by_service_.erase(it);
  return r;
}

std::vector<net::Ipv4Addr> VipPool::expire(std::uint64_t now_ms) {
  std::vector<net::Ipv4Addr> out;
  for (auto it = by_vip_.begin(); it != by_vip_.end();) {
    if (it->second.state == VipState::held && it->second.held_until_ms <= now_ms) {
      out.push_back(it->second.vip);
      it = by_vip_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::vector<VipRecord> VipPool::list() const {
  std::vector<VipRecord> out;
  for (const auto& [vip, r] : by_vip_) out.push_back(r);
  return out;
}

}  // namespace vxfed::services
