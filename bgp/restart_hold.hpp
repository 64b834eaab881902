// When the node's own bgpd restarts (a crash, an upgrade of its container) while zebra stays,
// zebra keeps bgpd's routes as stale only until the new bgpd's sessions are up: FRR 8.4's bgpd
// cannot start as a restarting speaker, so it reports its routes complete at once and zebra
// deletes the stale ones about a second before the peers have sent them again (docs/faults.md,
// bgpd_kill). RestartHold decides when the adapter holds those deletes instead: from the
// moment bgpd's pid changes until every peer that was up before is up again and has sent its
// End-of-RIB (or has been up for `settle`, for a peer that sends none) and that has stayed so
// for kRoutesSettle (bgpd has the routes then, but zebra may not have installed and streamed
// them yet: a hold that ended at the first such poll released a held delete 38 ms before
// zebra's add came, and faults_short's bgpd_kill lost 70 datagrams in CI), at most `max_hold`
// (the restart time we announce). A peer that goes down while our bgpd runs is not held: its
// routes go at once (the node-failure withdrawal stays BFD-fast). Pure logic; the adapter
// reads the pid file and polls the peers (docs/bgp.md, "bgpd restarts").
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "bgp/peer_status.hpp"

namespace vxfed::bgp {

class RestartHold {
 public:
  using Clock = std::chrono::steady_clock;
  RestartHold(std::chrono::seconds max_hold, std::chrono::seconds settle = std::chrono::seconds(5))
      : max_hold_(max_hold), settle_(settle) {}

  // A reading of bgpd's pid file ("" when there is none). True when it names another bgpd
  // than the last reading did: the window opens, awaiting the peers the last poll that bgpd
  // answered had up.
  bool on_pid(const std::string& pid, Clock::time_point now);
  // After every peer status poll, which started at `polled_at`: true when the window closes
  // now (every awaited peer back with its End-of-RIB or settled, or max_hold over). A poll
  // that started before the window opened may have read the old bgpd: it decides nothing.
  // Outside a window, a poll bgpd answered (some state known) says which peers are up.
  bool on_peers(const std::vector<PeerStatus>& peers, Clock::time_point polled_at, Clock::time_point now);

  // How long the peers must stay back before the window closes (see above).
  static constexpr std::chrono::seconds kRoutesSettle{1};

  bool holding() const { return holding_; }
  const std::string& closed_because() const { return closed_because_; }
  const std::vector<std::string>& awaited() const { return awaited_; }

 private:
  std::chrono::seconds max_hold_, settle_;
  std::string pid_;
  bool holding_ = false;
  Clock::time_point since_{};
  Clock::time_point back_since_{};  // when a poll first found every awaited peer back (0: not yet)
  std::vector<std::string> awaited_;  // peer addresses
  std::vector<std::string> up_;       // Established in the last poll bgpd answered
  std::string closed_because_;
};

}  // namespace vxfed::bgp
