#include "dataplane/runtime/dataplane.hpp"

#include <malloc.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <spdlog/spdlog.h>

#include "common/net/ipv4.hpp"
#include "common/version.hpp"
#include "common/net/mac.hpp"
#include "common/net/vxlan.hpp"
#include "dataplane/core/pipeline.hpp"
#include "dataplane/runtime/tables_json.hpp"

namespace vxfed::dataplane {

Result<std::unique_ptr<Dataplane>> Dataplane::create(const Options& options) {
  std::unique_ptr<Dataplane> d(new Dataplane());
  d->options_ = options;
  d->workers_ = options.queues;
  // parse_options checked the option values (Options::parsed); the packet path keeps
  // network order.
  d->vtep_ip_be_ = options.parsed.vtep.to_network();
  d->service_counters_ = std::make_unique<ServiceCounterSlots>(d->workers_);

  // Lcores: the main one is the control thread, then one per worker.
  if (rte_lcore_count() < d->workers_ + 1)
    return make_error("--queues " + std::to_string(d->workers_) + " needs " +
                      std::to_string(d->workers_ + 1) + " EAL lcores (control + workers), got " +
                      std::to_string(rte_lcore_count()) + ": give e.g. -l 0-" +
                      std::to_string(d->workers_));

  // --static-neighbor entries: the neighbour cache's static entries the tables do not name.
  for (const auto& [ip, mac] : options.parsed.static_neighbors) d->default_neighbors_.emplace_back(ip.to_network(), mac);

  auto ports = Ports::create(options, d->workers_);
  if (!ports) return make_error(ports.error());
  d->ports_ = std::move(*ports);
  d->uplink_mac_ = d->ports_->uplink_mac();
  d->port_guard_ = std::make_unique<VxlanPortGuard>(VxlanPortGuard::Config{
      options.parsed.vtep, net::kVxlanUdpPort, kernel_uplink_iface(options), options.uplink_kernel_drop,
      options.uplink_drop_pin_root});

  // RCU: one thread id per worker.
  const std::size_t qs_size = rte_rcu_qsbr_get_memsize(d->workers_);
  d->qs_ = static_cast<rte_rcu_qsbr*>(rte_zmalloc("vxfed_qsbr", qs_size, RTE_CACHE_LINE_SIZE));
  if (d->qs_ == nullptr || rte_rcu_qsbr_init(d->qs_, d->workers_) != 0)
    return make_error("cannot set up RCU state for " + std::to_string(d->workers_) + " workers");
  d->state_ = std::make_unique<RcuSlot<ForwardingState>>(d->qs_);
  d->reclaimer_ = std::make_unique<RcuReclaimer>(d->qs_);

  if (d->ports_->uplink_spread() == UplinkSpread::Software) {
    d->handoff_.assign(d->workers_, nullptr);
    for (unsigned w = 1; w < d->workers_; ++w) {
      const std::string name = "vxfed_handoff" + std::to_string(w);
      d->handoff_[w] = rte_ring_create(name.c_str(), 4096, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
      if (d->handoff_[w] == nullptr) return make_error("cannot create " + name);
    }
  }
  if (d->workers_ > 1 && options.conntrack_flows != 0) {
    // Global services: a packet that needs another worker's connection table goes to it
    // through the ring of its (from, to) pair and stage (docs/conntrack.md, "One table per worker").
    d->service_rings_.assign(std::size_t{d->workers_} * d->workers_ * kHandoverStages, nullptr);
    for (unsigned from = 0; from < d->workers_; ++from)
      for (unsigned to = 0; to < d->workers_; ++to)
        for (unsigned stage = 0; stage < kHandoverStages; ++stage) {
          if (from == to) continue;
          const std::string name = "vxfed_svc" + std::to_string(from) + "_" + std::to_string(to) + "_" + std::to_string(stage);
          rte_ring* r = rte_ring_create(name.c_str(), 1024, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
          if (r == nullptr) return make_error("cannot create " + name);
          d->service_rings_[(std::size_t{from} * d->workers_ + to) * kHandoverStages + stage] = r;
        }
  }
  if (d->ports_->control_tx_queue() < 0) {
    d->control_tx_ = rte_ring_create("vxfed_ctrl_tx", 256, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (d->control_tx_ == nullptr) return make_error("cannot create the control TX ring");
  }

  for (unsigned w = 0; w < d->workers_; ++w) {
    auto* c = static_cast<WorkerCounters*>(rte_zmalloc("vxfed_counters", sizeof(WorkerCounters), 64));
    auto* t = static_cast<TxStage*>(rte_zmalloc("vxfed_txstage", sizeof(TxStage), 64));
    if (c == nullptr || t == nullptr) return make_error("cannot allocate per-worker state (EAL memory)");
    new (c) WorkerCounters();
    new (t) TxStage();
    d->counters_.push_back(c);
    d->stages_.push_back(t);
    auto ctx = std::make_unique<WorkerContext>();
    ctx->id = w;
    ctx->workers = d->workers_;
    ctx->uplink = d->ports_->uplink();
    ctx->spread = d->ports_->uplink_spread();
    ctx->state = d->state_.get();
    ctx->qs = d->qs_;
    ctx->counters = c;
    ctx->tx = t;
    ctx->handoff = d->handoff_.empty() ? nullptr : d->handoff_.data();
    ctx->control_tx = w == 0 ? d->control_tx_ : nullptr;
    ctx->handoff_drops = &d->handoff_drops_;
    ctx->idle = IdlePolicy{options.idle_sleep_us, options.deep_idle_sleep_us,
                           options.deep_idle_after_ms * 1000u, options.busy_poll};
    ctx->idle.block = options.idle_wait == "auto";
    ctx->idle.spin_us = options.idle_spin_us;
    ctx->idle.spin_yield = options.idle_spin_yield;
    // Every loop reads the pod socket with a system call: 16 empty polls take about as long
    // as 256 ring reads did (idle_backoff.hpp). Measured with 256: sockperf p50 296 us
    // against 57 us with the af_packet endpoint ports in the same hour (docs/pod-ports.md).
    ctx->idle.spin_polls = 16;
    ctx->rt_priority = options.worker_rt_priority;
    if (options.conntrack_flows != 0) {
      ConntrackConfig cc;
      cc.capacity = options.conntrack_flows;
      cc.timeouts = ConntrackTimeouts::from_seconds(rte_get_tsc_hz());  // `now` is the TSC
      auto table = ConntrackTable::create(cc);
      if (!table) return make_error("--conntrack-flows: " + table.error());
      ctx->conntrack = std::move(*table);
      ctx->flows.table = ctx->conntrack.get();
    }
    ctx->flows.workers = d->workers_;
    ctx->flows.worker = w;
    ctx->flows.backend_counters = d->service_counters_.get();
    if (!d->service_rings_.empty()) {
      ctx->service_rings = d->service_rings_.data();
      ctx->all_wakes = &d->wakes_;
      ctx->flows.hand_over = &hand_over_to_worker;
      ctx->flows.hand_over_context = ctx.get();
    }
    // A real-time worker is woken in microseconds, so spinning buys it little, and its spin is
    // CPU the node's other processes cannot have (sched_yield does not yield to them): it
    // blocks after its second empty poll. Measured with two CPU hogs beside the latency suite:
    // docs/pod-ports.md, "A busy node".
    if (options.worker_rt_priority != 0) ctx->idle.spin_polls = 2;
    ctx->stop = &d->stop_workers_;
    d->wakes_.push_back(std::make_unique<WakeEvent>());
    ctx->wake = d->wakes_.back().get();
    ctx->uplink_wake_fds = d->ports_->uplink_wake_fds();
    if (const UplinkSockets* up = d->ports_->uplink_sockets()) {
      ctx->uplink_fd = up->fd(w);
      ctx->uplink_wake_fds = {up->fd(w)};  // the kernel's fanout hands this worker's frames to this one
      // Frames of the underlay MTU, and UDP super-packets of up to 64 KiB (a peer's
      // --uplink-gso over a veth, which keeps them whole), in mbufs of kPodSegmentBytes.
      ctx->uplink_segments = std::max(kPodFrameSegments, (options.mtu + 18 + kPodSegmentBytes - 1) / kPodSegmentBytes);
      ctx->uplink_segmenting = up->udp_gso() ? UplinkSegmenting::UdpGso : UplinkSegmenting::PerSegment;
    }
    ctx->pod_fd = d->ports_->pod_sockets().fd(w);
    ctx->pool = d->ports_->pool();
    ctx->capture = &d->capture_tap_;
    d->contexts_.push_back(std::move(ctx));
  }

  d->capture_ = std::make_unique<CaptureSession>(d->capture_tap_, d->qs_, d->workers_);
  Dataplane* self = d.get();
  auto arp = ArpResolver::create(d->neighbors_, options.parsed.underlay,
                                 [self](std::uint32_t ip) { return self->send_arp_request(ip); });
  if (!arp) return make_error(arp.error());
  d->arp_ = std::move(*arp);
  return d;
}

Result<bool> Dataplane::take_over(const std::atomic<bool>& stop) {
  if (options_.api_socket.empty()) return true;
  const auto asked = std::chrono::steady_clock::now();
  bool waited = false;
  auto lock = ServingLock::acquire(
      options_.api_socket, [&stop] { return stop.load(); },
      [&] {
        waited = true;
        spdlog::info("another vxfed-dataplane serves {}: standing by, ready, until it stops", options_.api_socket);
      });
  if (!lock) return make_error(lock.error());
  if (!lock->held()) {
    spdlog::info("stopped while standing by: never served");
    return false;
  }
  serving_ = std::move(*lock);
  if (waited) {
    // Frames the uplink queued while the other dataplane forwarded them: stale copies.
    const std::uint64_t stale = ports_->discard_queued_uplink_frames();
    spdlog::info("took over {} after standing by {:.1f} s ({} stale uplink frame(s) discarded)", options_.api_socket,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count(), stale);
  }
  auto api = ApiServer::create(options_.api_socket, [this](const v1::DataplaneRequest& rq, v1::DataplaneResponse& rs) {
    handle(rq, rs);
  });
  if (!api) return make_error(api.error());
  api_ = std::move(*api);
  return true;
}

Dataplane::~Dataplane() {
  stop_workers();
  api_.reset();
  capture_.reset();
  // Workers are gone: no grace period needed. Deferred frees first (they refer to the tables).
  if (reclaimer_) reclaimer_->run_all();
  state_.reset();
  tables_.reset();
  if (ports_) ports_->close_all();
  for (auto* c : counters_) rte_free(c);
  for (auto* t : stages_) rte_free(t);
  for (auto* r : handoff_) rte_ring_free(r);
  for (auto* r : service_rings_) rte_ring_free(r);
  rte_ring_free(control_tx_);
  rte_free(qs_);
}

void Dataplane::stop_workers() {
  if (!workers_running_) return;
  stop_workers_.store(true);
  wake_workers();
  rte_eal_mp_wait_lcore();
  workers_running_ = false;
}

void Dataplane::wake_workers() const {
  for (const auto& wake : wakes_) wake->signal();
}

Status Dataplane::run(const std::atomic<bool>& stop) {
  auto serving = take_over(stop);
  if (!serving) return make_error(serving.error());
  if (!*serving) return {};
  unsigned w = 0;
  unsigned lcore;
  RTE_LCORE_FOREACH_WORKER(lcore) {
    if (w == workers_) break;
    if (int rc = rte_eal_remote_launch(worker_main, contexts_[w].get(), lcore); rc != 0)
      return make_error("cannot launch worker " + std::to_string(w) + " on lcore " + std::to_string(lcore));
    spdlog::info("worker {} on lcore {}", w, lcore);
    ++w;
  }
  workers_running_ = true;

  if (!options_.tables_file.empty()) {
    auto snapshot = snapshot_from_file(options_.tables_file);
    if (!snapshot) return make_error("--tables-file: " + snapshot.error());
    if (auto st = apply_snapshot(*snapshot); !st) return make_error("--tables-file " + options_.tables_file + ": " + st.error());
  } else {
    spdlog::info("no tables yet: forwarding nothing until the first Snapshot");
  }

  while (!stop.load()) {
    // 20 ms: ARP retries need no finer clock, and an idle control thread wakes rarely; 1 ms
    // while frees wait for their grace period (workers pass one every loop).
    const int wait_ms = reclaimer_->pending() ? 1 : 20;
    if (api_) {
      api_->poll(wait_ms);
    } else {
      timespec ts{0, wait_ms * 1'000'000L};
      ::nanosleep(&ts, nullptr);
    }
    reclaimer_->poll();
    check_capture();  // after the reclaimer: a detached pod's port may be reused by the next request
    arp_->tick(std::chrono::steady_clock::now());
    tick_path_mtus();
    copy_neighbor_macs();
    port_guard_->tick(std::chrono::steady_clock::now());
  }
  spdlog::info("stopping");
  stop_workers();
  // Nothing of ours forwards or answers any more: a standing-by successor may take over now,
  // while the rest of this one's teardown (ports, EAL) runs.
  api_.reset();
  serving_.release();
  return {};
}

bool Dataplane::send_arp_request(std::uint32_t target_ip_be) {
  rte_mbuf* m = rte_pktmbuf_alloc(ports_->pool());
  if (m == nullptr) return false;
  if (!build_arp_request(m, uplink_mac_, vtep_ip_be_, target_ip_be)) {
    rte_pktmbuf_free(m);
    return false;
  }
  m->ol_flags = options_.parsed.underlay_tag.tx_flags;  // on a tagged underlay, in its VLAN
  m->vlan_tci = options_.parsed.underlay_tag.control_tci();
  bool sent;
  if (ports_->control_tx_queue() >= 0) {
    sent = rte_eth_tx_burst(ports_->uplink(), static_cast<std::uint16_t>(ports_->control_tx_queue()), &m, 1) == 1;
  } else {
    sent = rte_ring_enqueue(control_tx_, m) == 0;
    if (sent && !wakes_.empty()) wakes_[0]->signal();  // worker 0 may be blocked on its sockets
  }
  if (!sent) rte_pktmbuf_free(m);
  spdlog::debug("ARP request for {}: {}", net::Ipv4Addr::from_network(target_ip_be).str(), sent ? "sent" : "no room");
  return sent;
}

BuildContext Dataplane::build_context() const {
  BuildContext ctx;
  ctx.local_vtep_ip_be = vtep_ip_be_;
  ctx.uplink_mac = uplink_mac_;
  ctx.underlay_mtu = options_.mtu;
  ctx.uplink_port = ports_->uplink();
  ctx.underlay_tag = options_.parsed.underlay_tag;
  ctx.neighbors = const_cast<NeighborCache*>(&neighbors_);
  ctx.path_mtus = const_cast<PathMtuCache*>(&path_mtus_);
  ctx.vni_slots = const_cast<VniCounterSlots*>(&vni_slots_);
  ctx.service_counters = service_counters_.get();
  ctx.default_neighbors = default_neighbors_;
  const auto& eps = ports_->endpoint_ports();
  ctx.port_for_iface = [&eps](const std::string& iface) -> std::optional<std::uint16_t> {
    auto it = eps.find(iface);
    if (it == eps.end()) return std::nullopt;
    return it->second.port_id;
  };
  return ctx;
}

Status Dataplane::attach_ports(const google::protobuf::RepeatedPtrField<v1::Endpoint>& endpoints, const char* list,
                               std::vector<std::string>* attached_now) {
  std::set<std::string> seen;
  for (int i = 0; i < endpoints.size(); ++i) {
    const auto& e = endpoints.Get(i);
    if (e.iface().empty() || !seen.insert(e.iface()).second) continue;
    detach_pending_.erase(e.iface());  // wanted again: the deferred detach must leave it
    if (ports_->endpoint_ports().count(e.iface())) continue;
    auto port = ports_->attach(e.iface());
    if (!port) {
      for (const auto& iface : *attached_now) ports_->detach(iface);
      attached_now->clear();
      refused_endpoint_ = e.id();  // the response names it: the client may resend without it
      return make_error(std::string(list) + "[" + std::to_string(i) + "] (id \"" + e.id() + "\"): iface: " + port.error());
    }
    attached_now->push_back(e.iface());
    policy_drops_base_[*port] = policy_drops_of(*port);  // no worker counts on it before it is published
  }
  return {};
}

std::array<std::uint64_t, 4> Dataplane::policy_drops_of(std::uint16_t port) const {
  std::array<std::uint64_t, 4> sum{};
  for (unsigned w = 0; w < workers_; ++w) {
    const PolicyPortDrops& d = counters_[w]->policy_drops[port];
    sum[0] += d.denied_egress.get();
    sum[1] += d.denied_ingress.get();
    sum[2] += d.denied_remote_egress.get();
    sum[3] += d.forged_identity.get();
  }
  return sum;
}

void Dataplane::publish_state() {
  auto next = std::make_unique<ForwardingState>();
  next->tables = tables_.get();
  const std::vector<std::uint16_t> named = tables_->pod_port_ids();
  for (const std::uint16_t p : named)
    if (p < kFirstPodPort) next->pod_ports.push_back(p);  // the pod sockets serve the others
  next->version = ++state_versions_;
  next->pod_ifindex.assign(kMaxPodPorts, 0);
  next->pod_port_of_ifindex.reserve(ports_->endpoint_ports().size());
  const std::set<std::uint16_t> in_use(named.begin(), named.end());
  std::vector<std::string> unused;
  for (const auto& [iface, info] : ports_->endpoint_ports()) {
    if (!in_use.count(info.port_id)) {
      if (detach_pending_.insert(iface).second) unused.push_back(iface);
      continue;
    }
    if (info.pod_socket) {
      next->pod_ifindex[info.port_id - kFirstPodPort] = info.ifindex;
      next->pod_port_of_ifindex.insert(info.ifindex, info.port_id);
      ++next->socket_pods;
      continue;  // the worker's pod socket wakes it
    }
    if (info.wake_fds.empty()) next->pods_wakeable = false;
    next->pod_wake_fds.insert(next->pod_wake_fds.end(), info.wake_fds.begin(), info.wake_fds.end());
  }
  state_->publish_deferred(std::move(next), *reclaimer_);
  wake_workers();  // blocked workers start waiting on the new ports too
  // Ports no endpoint uses any more: detached once no worker can be polling them, unless a
  // later request wants them again meanwhile.
  for (const auto& iface : unused)
    reclaimer_->defer([this, iface] {
      if (detach_pending_.erase(iface)) ports_->detach(iface);
    });
}

Status Dataplane::apply_snapshot(const v1::Snapshot& snapshot) {
  const auto t0 = std::chrono::steady_clock::now();
  reclaimer_->poll();
  const v1::Tables& tables = snapshot.tables();
  // Attach the endpoint ports first: the tables refer to them by port.
  std::vector<std::string> attached_now;
  if (auto st = attach_ports(tables.endpoints(), "endpoints", &attached_now); !st) return st;
  TablesChangeReport report;
  auto built = ForwardingTables::create(tables, build_context(), &report);
  if (!built) {
    for (const auto& iface : attached_now) ports_->detach(iface);
    return make_error(built.error());
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::unique_ptr<ForwardingTables> old = std::move(tables_);
  tables_ = std::move(*built);
  publish_state();
  if (old) reclaimer_->defer([t = old.release()] { delete t; });  // after the old state
  generation_ = snapshot.generation();
  ready_ = true;
  port_guard_->set_vnis(tables_->vnis());
  ++snapshots_applied_;
  update_seconds_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  arp_->watch(report.new_vteps);
  ::malloc_trim(0);  // the request's parsed tables: a 130k-route Snapshot is tens of MiB of heap
  using ms = std::chrono::duration<double, std::milli>;
  spdlog::info("tables generation {} in force: {} networks, {} endpoints, {} routes, {} vteps, {:.1f} MiB "
               "(built in {:.1f} ms)",
               generation_, tables_->network_count(), tables_->endpoint_count(), tables_->route_count(),
               tables_->vtep_count(), static_cast<double>(tables_->memory_bytes()) / (1 << 20), ms(t1 - t0).count());
  return {};
}

Status Dataplane::apply_delta(const v1::Delta& delta) {
  if (!ready_) return make_error("a Delta needs a Snapshot first: no tables are loaded");
  const auto started = std::chrono::steady_clock::now();
  reclaimer_->poll();
  std::vector<std::string> attached_now;
  if (auto st = attach_ports(delta.upsert().endpoints(), "upsert.endpoints", &attached_now); !st) return st;
  auto report = tables_->apply(delta, build_context(), *reclaimer_);
  if (!report) {
    for (const auto& iface : attached_now) ports_->detach(iface);
    return make_error(report.error());
  }
  if (report->pod_ports_changed) publish_state();
  if (report->waited_grace_period) ++handovers_;
  arp_->watch(report->new_vteps);
  port_guard_->set_vnis(tables_->vnis());
  generation_ = delta.generation();
  ++deltas_applied_;
  update_seconds_.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  spdlog::debug("delta generation {} in force: {} entries", generation_, report->entries);
  return {};
}

void Dataplane::handle(const v1::DataplaneRequest& request, v1::DataplaneResponse& response) {
  response.set_request_id(request.request_id());
  refused_endpoint_.clear();
  Status st;
  switch (request.op_case()) {
    case v1::DataplaneRequest::kSnapshot:
      st = apply_snapshot(request.snapshot());
      check_capture();  // a port it detached may be reused by the next request
      break;
    case v1::DataplaneRequest::kDelta:
      st = apply_delta(request.delta());
      check_capture();
      break;
    case v1::DataplaneRequest::kGetStatus:
      fill_status(*response.mutable_status());
      break;
    case v1::DataplaneRequest::kGetCounters:
      fill_counters(*response.mutable_counters());
      break;
    case v1::DataplaneRequest::kGetServiceCounters:
      fill_service_counters(*response.mutable_service_counters());
      break;
    case v1::DataplaneRequest::kStartCapture:
      st = start_capture(request.start_capture());
      if (st) capture_->read(*response.mutable_capture());
      break;
    case v1::DataplaneRequest::kReadCapture:
      check_capture();
      capture_->read(*response.mutable_capture());
      break;
    case v1::DataplaneRequest::kStopCapture:
      capture_->stop(*response.mutable_capture());
      break;
    case v1::DataplaneRequest::kDumpTables: {
      auto* t = response.mutable_tables();
      t->set_generation(generation_);
      if (tables_) *t->mutable_tables() = tables_->dump();
      break;
    }
    default:
      st = make_error("request " + std::to_string(request.request_id()) + " names no operation");
  }
  response.set_ok(st.ok());
  if (!st) {
    ++requests_refused_;
    response.set_error(st.error());
    if (!refused_endpoint_.empty()) response.set_refused_endpoint(refused_endpoint_);
    spdlog::warn("API: refused request {}: {}", request.request_id(), st.error());
  }
}

void Dataplane::fill_service_counters(v1::ServiceCountersReport& report) {
  // The census: each worker walks its own connection table (never another thread: the table
  // has one owner), a part per loop iteration, into the buffer given here.
  bool counted = workers_running_ && options_.conntrack_flows != 0 && !contexts_.empty();
  for (auto& ctx : contexts_) {
    FlowCensus& c = ctx->census;
    if (c.state.load(std::memory_order_acquire) == FlowCensus::kDone) c.state.store(FlowCensus::kIdle);  // a late one
    if (c.state.load(std::memory_order_acquire) != FlowCensus::kIdle) counted = false;  // still walking
  }
  if (counted) {
    // Every translated flow of a worker fits: a table holds at most conntrack_flows (1M cap).
    const std::size_t room = std::min<std::size_t>(options_.conntrack_flows, 1u << 20);
    for (unsigned w = 0; w < contexts_.size(); ++w) {
      FlowCensus& c = contexts_[w]->census;
      c.out.resize(room);
      c.count = 0;
      c.cursor = 0;
      c.truncated = false;
      c.state.store(FlowCensus::kRequested, std::memory_order_release);
      if (w < wakes_.size()) wakes_[w]->signal();  // it may be blocked on its sockets
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (;;) {
      bool all = true;
      for (auto& ctx : contexts_) all = all && ctx->census.state.load(std::memory_order_acquire) == FlowCensus::kDone;
      if (all) break;
      if (std::chrono::steady_clock::now() > deadline) {
        counted = false;
        spdlog::warn("GetServiceCounters: the workers' census of flows did not finish within 2 s");
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  report.set_flows_counted(counted);

  struct Backend {
    std::uint64_t new_flows = 0, flows = 0;
    bool in_entry = false;
    std::uint32_t weight = 0;
    std::set<std::uint32_t> ports;
  };
  struct Service {
    v1::ServiceCounters* out;
    std::map<std::uint32_t, Backend> backends;  // by address, host order
  };
  std::vector<Service> services;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> by_vip;  // (vni, vip_be) -> services index
  if (tables_) {
    tables_->for_each_service([&](const std::string& id, std::uint32_t vni, std::uint32_t vip_be,
                                  const std::vector<ServicePortEntry>& ports,
                                  const std::vector<ServiceBackendWeight>& backends) {
      auto* sc = report.add_services();
      sc->set_id(id);
      sc->set_vni(vni);
      sc->set_vip(net::Ipv4Addr::from_network(vip_be).str());
      for (const auto& p : ports) {
        auto* sp = sc->add_ports();
        sp->set_protocol(p.protocol);
        sp->set_port(ntohs(p.port_be));
        sp->set_target_port(ntohs(p.target_port_be));
      }
      Service s{sc, {}};
      for (const auto& b : backends) {
        Backend& x = s.backends[ntohl(b.ip_be)];
        x.in_entry = true;
        x.weight = b.weight;
      }
      const auto& slots = service_counters_->all();
      for (auto it = slots.lower_bound({id, 0}); it != slots.end() && it->first.first == id; ++it)
        s.backends[ntohl(it->first.second)].new_flows = service_counters_->new_flows(it->second);
      by_vip.emplace(std::make_pair(vni, vip_be), services.size());
      services.push_back(std::move(s));
    });
  }
  if (counted) {
    std::uint64_t elsewhere = 0;
    for (auto& ctx : contexts_) {
      const FlowCensus& c = ctx->census;
      if (c.truncated) report.set_flows_truncated(true);
      for (std::uint32_t i = 0; i < c.count; ++i) {
        const ServiceFlowRecord& r = c.out[i];
        const auto it = by_vip.find({r.vni & 0xffffffu, r.vip_be});
        Service* s = it == by_vip.end() ? nullptr : &services[it->second];
        const bool port_of_service = s && std::any_of(s->out->ports().begin(), s->out->ports().end(), [&](const auto& p) {
          return p.protocol() == r.protocol && p.port() == ntohs(r.vip_port_be);
        });
        if (!port_of_service) {
          ++elsewhere;
          continue;
        }
        Backend& b = s->backends[ntohl(r.backend_be)];
        ++b.flows;
        b.ports.insert(ntohs(r.backend_port_be));
      }
      ctx->census.state.store(FlowCensus::kIdle, std::memory_order_release);
    }
    report.set_flows_elsewhere(elsewhere);
  }
  for (Service& s : services) {
    std::uint64_t new_flows = 0, flows = 0;
    for (const auto& [ip, b] : s.backends) {
      auto* bc = s.out->add_backends();
      bc->set_ip(net::Ipv4Addr{ip}.str());
      bc->set_new_flows(b.new_flows);
      bc->set_flows(b.flows);
      bc->set_in_entry(b.in_entry);
      bc->set_weight(b.weight);
      for (std::uint32_t p : b.ports) bc->add_ports(p);
      new_flows += b.new_flows;
      flows += b.flows;
    }
    s.out->set_new_flows(new_flows);
    s.out->set_flows(flows);
  }
}

std::optional<std::uint16_t> Dataplane::attached_pod_port(const std::string& iface) const {
  const auto& eps = ports_->endpoint_ports();
  auto it = eps.find(iface);
  if (it == eps.end() || detach_pending_.count(iface)) return std::nullopt;
  return it->second.port_id;
}

Status Dataplane::start_capture(const v1::StartCapture& request) {
  std::uint32_t port;
  if (request.port() == "uplink") {
    port = ports_->uplink();
  } else {
    const auto pod = attached_pod_port(request.port());
    if (!pod)
      return make_error("port: '" + request.port() + "' is neither \"uplink\" nor the interface of an attached pod");
    port = *pod;
  }
  return capture_->start(request, port, request.port(), std::chrono::steady_clock::now());
}

void Dataplane::check_capture() {
  if (!capture_->active()) return;
  const std::string& name = capture_->port_name();
  if (name != "uplink" && !attached_pod_port(name)) {
    capture_->port_removed();
    return;
  }
  capture_->tick(std::chrono::steady_clock::now());
}

void Dataplane::fill_status(v1::DataplaneStatus& s) const {
  s.set_ready(ready_);
  s.set_generation(generation_);
  s.set_vtep_ip(options_.vtep_ip);
  s.set_underlay_mtu(options_.mtu);
  s.set_workers(workers_);
  s.set_uptime_ms(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started_).count()));
  s.set_ports(static_cast<std::uint32_t>(1 + ports_->endpoint_ports().size()));
  s.set_version(vxfed::kVersion);
  s.set_api_refused(api_ ? api_->refused() : 0);
  port_guard_->fill_status(s);
  if (tables_) {
    s.set_networks(static_cast<std::uint32_t>(tables_->network_count()));
    s.set_endpoints(static_cast<std::uint32_t>(tables_->endpoint_count()));
    s.set_routes(static_cast<std::uint32_t>(tables_->route_count()));
    s.set_vteps(static_cast<std::uint32_t>(tables_->vtep_count()));
    s.set_tables_bytes(tables_->memory_bytes());
  }
  s.set_deltas_applied(deltas_applied_);
  s.set_reclaim_pending(reclaimer_->pending());
  s.set_handovers(handovers_);
}

void Dataplane::fill_counters(v1::Counters& out) const {
  std::vector<std::pair<std::string, std::uint16_t>> ports{{"uplink", ports_->uplink()}};
  for (const auto& [iface, info] : ports_->endpoint_ports()) ports.emplace_back(iface, info.port_id);
  ports.emplace_back("pods", kPodsPort);  // the pod sockets: socket drops, frames of no pod
  for (const auto& [name, id] : ports) {
    rte_eth_stats stats{};
    if (id < RTE_MAX_ETHPORTS) rte_eth_stats_get(id, &stats);  // not our socket ports
    for (unsigned w = 0; w < workers_; ++w) {
      const PortCounters& c = counters_[w]->ports[id];
      auto* p = out.add_ports();
      p->set_name(name);
      p->set_queue(w);
      p->set_rx_packets(c.rx_packets.get());
      p->set_rx_bytes(c.rx_bytes.get());
      p->set_tx_packets(c.tx_packets.get());
      p->set_tx_bytes(c.tx_bytes.get());
      // Device-level losses (RX ring overruns, no mbuf, TX errors) have no queue: queue 0.
      // af_packet ring overflows are per socket, i.e. per queue.
      const std::uint64_t ring = ports_->ring_drops(id, w);
      p->set_ring_drops(ring);
      p->set_drops(c.drops.get() + ring + (w == 0 ? stats.imissed + stats.rx_nombuf + stats.oerrors : 0));
    }
  }
  for (const auto& [vni, slot] : vni_slots_.all()) {
    auto* v = out.add_vnis();
    v->set_vni(vni);
    std::uint64_t sums[6] = {};
    for (unsigned w = 0; w < workers_; ++w) {
      const VniCounters& c = counters_[w]->vnis[slot];
      sums[0] += c.encap_packets.get();
      sums[1] += c.encap_bytes.get();
      sums[2] += c.decap_packets.get();
      sums[3] += c.decap_bytes.get();
      sums[4] += c.local_packets.get();
      sums[5] += c.local_bytes.get();
    }
    v->set_encap_packets(sums[0]);
    v->set_encap_bytes(sums[1]);
    v->set_decap_packets(sums[2]);
    v->set_decap_bytes(sums[3]);
    v->set_local_packets(sums[4]);
    v->set_local_bytes(sums[5]);
  }
  for (std::uint32_t r = 0; r < kDropReasonCount; ++r) {
    std::uint64_t total = 0;
    for (unsigned w = 0; w < workers_; ++w) total += counters_[w]->drops[r].get();
    auto* d = out.add_drops();
    d->set_reason(std::string(drop_reason_name(static_cast<DropReason>(r))));
    d->set_packets(total);
  }
  std::uint64_t gbp = 0, gbp_applied = 0;
  for (unsigned w = 0; w < workers_; ++w) {
    gbp += counters_[w]->group_policy.rx_packets.get();
    gbp_applied += counters_[w]->group_policy.rx_policy_applied.get();
  }
  out.set_gbp_rx_packets(gbp);
  out.set_gbp_rx_policy_applied(gbp_applied);
  if (tables_) {
    for (const auto& e : tables_->port_endpoints()) {
      const auto now = policy_drops_of(e.port);
      const auto& base = policy_drops_base_[e.port];
      auto* d = out.add_policy_drops();
      d->set_endpoint_id(e.id);
      d->set_iface(e.iface);
      d->set_vni(e.vni);
      d->set_ip(net::Ipv4Addr::from_network(e.ip_be).str());
      d->set_denied_egress(now[0] - base[0]);
      d->set_denied_ingress(now[1] - base[1]);
      d->set_denied_remote_egress(now[2] - base[2]);
      d->set_forged_identity(now[3] - base[3]);
    }
  }
  const double tsc_hz = static_cast<double>(rte_get_tsc_hz());
  for (unsigned w = 0; w < contexts_.size(); ++w) {
    const auto& ctx = *contexts_[w];
    auto* s = out.add_workers();
    s->set_worker(w);
    s->set_loops(ctx.loops.load(std::memory_order_relaxed));
    s->set_busy_loops(ctx.busy_loops.load(std::memory_order_relaxed));
    s->set_busy_seconds(tsc_hz > 0 ? static_cast<double>(ctx.busy_cycles.load(std::memory_order_relaxed)) / tsc_hz : 0);
    s->set_sleeps(ctx.sleeps.load(std::memory_order_relaxed));
    const ServiceCounters& sc = ctx.counters->services;
    s->set_service_new_flows(sc.new_flows.get());
    s->set_service_translated(sc.translated.get());
    s->set_service_replies_translated(sc.replies_translated.get());
    s->set_service_repicked(sc.repicked.get());
    s->set_service_handed_over(sc.handed_over.get());
    const PolicyCounters& pc = ctx.counters->policy;
    s->set_policy_new_flows(pc.new_flows.get());
    s->set_policy_allowed(pc.allowed.get());
    s->set_policy_denied(pc.denied.get());
  }
  auto* sizes = out.mutable_tables();
  if (tables_) {
    sizes->set_networks(static_cast<std::uint32_t>(tables_->network_count()));
    sizes->set_endpoints(static_cast<std::uint32_t>(tables_->endpoint_count()));
    sizes->set_routes(static_cast<std::uint32_t>(tables_->route_count()));
    sizes->set_vteps(static_cast<std::uint32_t>(tables_->vtep_count()));
  }
  sizes->set_neighbors(neighbors_.size());
  auto* h = out.mutable_table_update_seconds();
  for (const double b : update_seconds_.upper_bounds()) h->add_upper_bounds(b);
  for (const auto c : update_seconds_.bucket_counts()) h->add_bucket_counts(c);
  h->set_sum(update_seconds_.sum());
  h->set_count(update_seconds_.count());
  out.set_snapshots_applied(snapshots_applied_);
  out.set_deltas_applied(deltas_applied_);
  out.set_requests_refused(requests_refused_);
  out.set_api_refused(api_ ? api_->refused() : 0);
}

std::string Dataplane::counters_text() const {
  v1::Counters c;
  fill_counters(c);
  std::ostringstream s;
  s << "vxfed-dataplane final counters (generation " << generation_ << ")\n";
  for (const auto& p : c.ports())
    s << "  port " << p.name() << " queue " << p.queue() << ": rx " << p.rx_packets() << " pkts "
      << p.rx_bytes() << " bytes, tx " << p.tx_packets() << " pkts " << p.tx_bytes() << " bytes, drops "
      << p.drops() << (p.ring_drops() ? " (af_packet ring full: " + std::to_string(p.ring_drops()) + ")" : std::string()) << "\n";
  for (const auto& v : c.vnis())
    s << "  vni " << v.vni() << ": encap " << v.encap_packets() << " pkts " << v.encap_bytes()
      << " bytes, decap " << v.decap_packets() << " pkts " << v.decap_bytes() << " bytes, local "
      << v.local_packets() << " pkts " << v.local_bytes() << " bytes\n";
  std::uint64_t total = 0;
  for (const auto& d : c.drops()) {
    total += d.packets();
    if (d.packets() != 0) s << "  drop " << d.reason() << ": " << d.packets() << "\n";
  }
  s << "  drops total: " << total << " (" << kDropReasonCount << " reasons; zeros not shown)\n";
  s << "  vxlan-gbp received: " << c.gbp_rx_packets() << " (policy applied: " << c.gbp_rx_policy_applied() << ")\n";
  for (const auto& d : c.policy_drops())
    if (d.denied_egress() + d.denied_ingress() + d.denied_remote_egress() + d.forged_identity() != 0)
      s << "  policy drops of " << d.ip() << " (vni " << d.vni() << ", " << d.iface() << "): egress "
        << d.denied_egress() << ", ingress " << d.denied_ingress() << ", remote egress " << d.denied_remote_egress()
        << ", forged identity " << d.forged_identity() << "\n";
  s << "  arp requests sent: " << arp_->requests_sent() << "\n";
  for (const auto& e : path_mtus_.exceptions())
    s << "  path mtu toward " << net::Ipv4Addr::from_network(e.vtep_ip_be).str() << ": " << e.mtu << " (expires in "
      << e.expires_in_s << " s)\n";
  return s.str();
}

// The VTEP entries carry their neighbour's MAC (VtepEntry::head): copied again whenever the
// neighbour cache changed (ARP learned by a worker or by this thread, static entries of a
// Delta). Until then an entry keeps the MAC it had: at most one loop of this thread (≤ 20 ms)
// of packets toward a neighbour whose MAC just changed still go to the old one; an entry
// with no MAC yet reads the cache itself.
void Dataplane::copy_neighbor_macs() {
  const std::uint64_t changes = neighbors_.changes();
  if (changes == neighbor_changes_copied_ || !tables_) return;
  neighbor_changes_copied_ = changes;
  tables_->copy_neighbor_macs();
}

void Dataplane::tick_path_mtus() {
  const auto now_s = static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count());
  if (now_s == path_mtu_tick_s_) return;
  path_mtu_tick_s_ = now_s;
  path_mtus_.tick(now_s);
  // The log names every change of the set (a new or lowered path MTU, one expired), not its
  // countdown.
  auto now = path_mtus_.exceptions();
  auto key = [](const std::vector<PathMtuCache::Exception>& v) {
    std::vector<std::pair<std::uint32_t, std::uint16_t>> k;
    for (const auto& e : v) k.emplace_back(e.vtep_ip_be, e.mtu);
    std::sort(k.begin(), k.end());
    return k;
  };
  const auto before = key(path_mtus_logged_), after = key(now);
  if (before == after) return;
  for (const auto& [ip, mtu] : after)
    if (!std::binary_search(before.begin(), before.end(), std::make_pair(ip, mtu)))
      spdlog::warn("path MTU toward VTEP {} is {} (an underlay router's ICMP fragmentation-needed): pod packets over "
                   "{} bytes toward it are answered with fragmentation-needed for {} for {} s",
                   net::Ipv4Addr::from_network(ip).str(), mtu, mtu - wire::kVxlanOverhead, mtu - wire::kVxlanOverhead,
                   PathMtuCache::kLifetimeSeconds);
  for (const auto& [ip, mtu] : before) {
    const bool still = std::any_of(after.begin(), after.end(), [&](const auto& a) { return a.first == ip; });
    if (!still) spdlog::info("path MTU toward VTEP {} back to the underlay's {} (the lowered {} expired)",
                             net::Ipv4Addr::from_network(ip).str(), options_.mtu, mtu);
  }
  path_mtus_logged_ = std::move(now);
}

}  // namespace vxfed::dataplane
