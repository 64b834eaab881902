#include "bgp/restart_hold.hpp"

#include <algorithm>

namespace vxfed::bgp {

bool RestartHold::on_pid(const std::string& pid, Clock::time_point now) {
  if (pid.empty() || pid == pid_) return false;
  const bool first = pid_.empty();
  pid_ = pid;
  if (first) return false;  // the bgpd we started with
  if (!holding_) awaited_ = up_;
  holding_ = true;
  since_ = now;
  back_since_ = {};
  return true;
}

bool RestartHold::on_peers(const std::vector<PeerStatus>& peers, Clock::time_point polled_at,
                           Clock::time_point now) {
  if (!holding_) {
    const bool answered = std::any_of(peers.begin(), peers.end(), [](const PeerStatus& p) { return p.state != "Unknown"; });
    if (answered) {
      up_.clear();
      for (const auto& p : peers)
        if (p.state == "Established") up_.push_back(p.address);
    }
    return false;
  }
  if (now - since_ >= max_hold_) {
    closed_because_ = "restart time over";
  } else {
    if (polled_at < since_) return false;
    for (const auto& a : awaited_) {
      auto it = std::find_if(peers.begin(), peers.end(), [&](const PeerStatus& p) { return p.address == a; });
      const bool back = it != peers.end() && it->state == "Established" &&
                        (it->end_of_rib_received || std::chrono::seconds(it->uptime_s) >= settle_);
      if (!back) {
        back_since_ = {};
        return false;
      }
    }
    if (back_since_ == Clock::time_point{}) back_since_ = now;
    if (now - back_since_ < kRoutesSettle) return false;
    closed_because_ = awaited_.empty() ? "no peer was up before" : "every peer back with its routes";
  }
  holding_ = false;
  return true;
}

}  // namespace vxfed::bgp
