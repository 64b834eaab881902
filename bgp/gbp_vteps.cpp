#include "bgp/gbp_vteps.hpp"

#include <algorithm>

namespace vxfed::bgp {

GbpVteps::Count& GbpVteps::touch(net::Ipv4Addr vtep) {
  Count& c = counts_[vtep.value];
  if (!c.touched) {
    c.touched = true;
    touched_.push_back(vtep.value);
  }
  return c;
}

void GbpVteps::add(const RemoteRoute& route, int sign) {
  for (const auto& vtep : route.vteps) {
    Count& c = touch(vtep);
    const bool was = c.gbp();
    c.routes = static_cast<std::uint32_t>(static_cast<int>(c.routes) + sign);
    if (route.gbp_mark) c.marked = static_cast<std::uint32_t>(static_cast<int>(c.marked) + sign);
    if (was != c.gbp()) gbp_count_ = was ? gbp_count_ - 1 : gbp_count_ + 1;
  }
}

void GbpVteps::route_changed(const RemoteRoute* before, const RemoteRoute* after) {
  if (before != nullptr && after != nullptr && before->vteps == after->vteps && before->gbp_mark == after->gbp_mark)
    return;
  if (before != nullptr) add(*before, -1);
  if (after != nullptr) add(*after, +1);
}

void GbpVteps::clear_routes() {
  for (auto& [vtep, c] : counts_) {
    if (c.routes == 0) continue;
    if (!c.touched) {
      c.touched = true;
      touched_.push_back(vtep);
    }
    c.routes = c.marked = 0;
  }
  gbp_count_ = 0;
}

bool GbpVteps::takes_gbp(net::Ipv4Addr vtep) const {
  auto it = counts_.find(vtep.value);
  return it != counts_.end() && it->second.gbp();
}

std::vector<net::Ipv4Addr> GbpVteps::gbp_vteps() const {
  std::vector<net::Ipv4Addr> out;
  out.reserve(gbp_count_);
  for (const auto& [vtep, c] : counts_)
    if (c.gbp()) out.push_back(net::Ipv4Addr{vtep});
  std::sort(out.begin(), out.end());
  return out;
}

GbpVteps::Changes GbpVteps::take_changes() {
  Changes out;
  for (const std::uint32_t vtep : touched_) {
    auto it = counts_.find(vtep);
    Count& c = it->second;
    c.touched = false;
    const bool now = c.gbp();
    if (now && !c.taken) out.now_gbp.push_back(net::Ipv4Addr{vtep});
    if (!now && c.taken) out.no_longer.push_back(net::Ipv4Addr{vtep});
    c.taken = now;
    if (c.routes == 0 && !c.taken) counts_.erase(it);  // nothing names it, nothing to clear
  }
  touched_.clear();
  std::sort(out.now_gbp.begin(), out.now_gbp.end());
  std::sort(out.no_longer.begin(), out.no_longer.end());
  return out;
}

void GbpVteps::mark_all_taken() {
  for (const std::uint32_t vtep : touched_) counts_[vtep].touched = false;
  touched_.clear();
  for (auto it = counts_.begin(); it != counts_.end();) {
    it->second.taken = it->second.gbp();
    if (it->second.routes == 0) it = counts_.erase(it);
    else ++it;
  }
}

}  // namespace vxfed::bgp
