// vxfed-dataplane as one object: ports, workers, the RCU-published forwarding state, the
// table API and ARP resolution. The control thread (the EAL main lcore) runs run(); workers
// run on the other lcores. Everything here except the workers is control-thread only.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "dataplane/runtime/api_server.hpp"
#include "dataplane/runtime/arp_resolver.hpp"
#include "dataplane/runtime/capture_session.hpp"
#include "dataplane/runtime/capture_tap.hpp"
#include "dataplane/core/counters.hpp"
#include "dataplane/core/neighbor_cache.hpp"
#include "dataplane/core/tx_stage.hpp"
#include "proto/dataplane.pb.h"
#include "dataplane/runtime/forwarding_state.hpp"
#include "dataplane/runtime/options.hpp"
#include "dataplane/runtime/ports.hpp"
#include "dataplane/runtime/rcu_reclaimer.hpp"
#include "dataplane/runtime/rcu_slot.hpp"
#include "dataplane/runtime/vxlan_port_guard.hpp"
#include "common/metrics/histogram.hpp"
#include "common/result.hpp"
#include "common/serving_lock.hpp"
#include "dataplane/runtime/worker.hpp"

namespace vxfed::dataplane {

class Dataplane {
 public:
  // Sets everything up (EAL already initialised); workers are not started yet.
  static Result<std::unique_ptr<Dataplane>> create(const Options& options);
  ~Dataplane();

  // Takes over the API socket (standing by while another dataplane serves it: ServingLock),
  // starts the workers, applies --tables-file, serves the API until `stop` becomes true, and
  // lets a standing-by successor take over as soon as the workers have stopped.
  Status run(const std::atomic<bool>& stop);

  // ---- table API (also used for --tables-file) ----
  Status apply_snapshot(const v1::Snapshot& snapshot);
  Status apply_delta(const v1::Delta& delta);
  void handle(const v1::DataplaneRequest& request, v1::DataplaneResponse& response);
  void fill_status(v1::DataplaneStatus& status) const;
  void fill_counters(v1::Counters& counters) const;
  // GetServiceCounters: new flows per service and backend, and the live flows the workers'
  // census finds (waits for it, at most 2 s).
  void fill_service_counters(v1::ServiceCountersReport& report);

  // Human-readable counters (non-zero lines), printed on exit.
  std::string counters_text() const;

 private:
  Dataplane() = default;
  BuildContext build_context() const;
  // Attaches the endpoint ports of `endpoints` not attached yet; on failure detaches those it
  // attached and names the entry (`list` is "endpoints" or "upsert.endpoints").
  Status attach_ports(const google::protobuf::RepeatedPtrField<v1::Endpoint>& endpoints, const char* list,
                      std::vector<std::string>* attached_now);
  // Publishes a new ForwardingState for tables_ (its pod ports) and schedules the detach of
  // ports nothing uses any more, after the grace period.
  void publish_state();
  bool send_arp_request(std::uint32_t target_ip_be);
  // The port index of a pod's interface while it is attached and not on its way out.
  std::optional<std::uint16_t> attached_pod_port(const std::string& iface) const;
  // StartCapture: the port by its name ("uplink" or a pod's interface).
  Status start_capture(const v1::StartCapture& request);
  // Every control loop (20 ms) and after every table change: ends a capture whose time is up
  // or whose pod port is going away (before another pod can get its index).
  void check_capture();
  void stop_workers();

  Options options_;
  std::uint32_t vtep_ip_be_ = 0;
  wire::MacAddress uplink_mac_{};
  std::unique_ptr<Ports> ports_;
  std::unique_ptr<VxlanPortGuard> port_guard_;  // VTEP:4789 ours: the claim and the uplink's tc drop
  unsigned workers_ = 1;
  rte_rcu_qsbr* qs_ = nullptr;
  std::unique_ptr<RcuSlot<ForwardingState>> state_;
  std::unique_ptr<RcuReclaimer> reclaimer_;      // frees after grace periods (rcu_reclaimer.hpp)
  std::unique_ptr<ForwardingTables> tables_;     // what state_ points workers at
  std::set<std::string> detach_pending_;         // ifaces to detach once no worker polls them
  NeighborCache neighbors_;
  VniCounterSlots vni_slots_;
  std::unique_ptr<ServiceCounterSlots> service_counters_;  // new flows per (service, backend)
  PathMtuCache path_mtus_;                       // learned by workers from the underlay's ICMP
  std::uint32_t path_mtu_tick_s_ = ~0u;          // the last second path_mtus_ was ticked
  std::uint64_t neighbor_changes_copied_ = 0;    // neighbors_.changes() at the last copy into the VTEP entries
  std::vector<PathMtuCache::Exception> path_mtus_logged_;  // what the log last said
  // Once a second: expires path MTUs and logs what changed (control thread).
  void tick_path_mtus();
  void copy_neighbor_macs();
  std::vector<WorkerCounters*> counters_;
  // A pod port's PolicyPortDrops summed over the workers (egress, ingress, remote egress,
  // forged identity), and their sums when the port was last attached: an endpoint's report
  // counts from its own attach, not a previous holder's of the port.
  std::array<std::uint64_t, 4> policy_drops_of(std::uint16_t port) const;
  std::array<std::array<std::uint64_t, 4>, kMaxPorts> policy_drops_base_{};
  std::vector<TxStage*> stages_;
  std::vector<std::unique_ptr<WorkerContext>> contexts_;
  std::vector<std::unique_ptr<WakeEvent>> wakes_;   // one per worker (socket_wakeup.hpp)
  std::uint64_t state_versions_ = 0;
  std::vector<rte_ring*> handoff_;
  // Global services with several workers: SPSC rings (from, to, HandoverStage), worker.hpp.
  std::vector<rte_ring*> service_rings_;
  rte_ring* control_tx_ = nullptr;
  std::atomic<std::uint64_t> handoff_drops_{0};
  std::atomic<bool> stop_workers_{false};
  void wake_workers() const;
  bool workers_running_ = false;
  std::unique_ptr<ArpResolver> arp_;
  std::unique_ptr<ApiServer> api_;
  ServingLock serving_;                      // held while this process serves --api-socket
  // Waits for the API socket's serving lock; false when `stop` came first.
  Result<bool> take_over(const std::atomic<bool>& stop);
  CaptureTap capture_tap_;                   // read by the workers
  std::unique_ptr<CaptureSession> capture_;  // StartCapture / ReadCapture / StopCapture

  std::uint64_t generation_ = 0;
  bool ready_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::uint64_t snapshots_applied_ = 0, deltas_applied_ = 0, requests_refused_ = 0, handovers_ = 0;
  std::vector<std::pair<std::uint32_t, wire::MacAddress>> default_neighbors_;  // --static-neighbor
  std::string refused_endpoint_;  // the endpoint whose port could not be attached by the last request
  metrics::Histogram update_seconds_;  // Snapshot/Delta received to tables in force
};

}  // namespace vxfed::dataplane
