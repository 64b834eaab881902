#include "control/federation_link.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "common/net/ipv4.hpp"
#include "control/node_state.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
namespace fed = ::vxfed::federation;

namespace {

v1::ErrorCode api_code(fed::Code code) {
  switch (code) {
    case fed::Code::unavailable: return v1::UNAVAILABLE;
    case fed::Code::exhausted: return v1::EXHAUSTED;
    case fed::Code::conflict: return v1::ALREADY_EXISTS;
    case fed::Code::invalid: return v1::INVALID_ARGUMENT;
    case fed::Code::not_found: return v1::NOT_FOUND;
    case fed::Code::internal: return v1::INTERNAL;
  }
  return v1::INTERNAL;
}

}  // namespace

unsigned FederationLink::block_length_of(const NetworkConfig& network) {
  if (network.block_prefix_len != 0) return network.block_prefix_len;
  const auto subnet = net::Ipv4Prefix::parse(network.subnet);
  return std::max<unsigned>(fed::kDefaultBlockLength, subnet ? subnet->len : 0);
}

Result<std::unique_ptr<FederationLink>> FederationLink::create(asio::io_context& io, const Config& config,
                                                               std::shared_ptr<spdlog::logger> log) {
  fed::EtcdOptions options;
  options.endpoints = config.federation.endpoints;
  options.ca_file = config.federation.ca_file;
  options.cert_file = config.federation.cert_file;
  options.key_file = config.federation.key_file;
  options.key_prefix = config.federation.key_prefix;
  options.request_timeout_ms = config.federation.request_timeout_ms;
  auto client = fed::EtcdClient::create(options);
  if (!client) return make_error(config.source + ": federation: " + client.error());
  return std::unique_ptr<FederationLink>(new FederationLink(io, config, std::move(*client), std::move(log)));
}

FederationLink::FederationLink(asio::io_context& io, const Config& config, std::unique_ptr<fed::EtcdClient> client,
                               std::shared_ptr<spdlog::logger> log)
    : io_(io),
      settings_(config.federation),
      node_(config.node.name),
      client_(std::move(client)),
      log_(std::move(log)),
      keep_alive_timer_(io),
      reconcile_timer_(io) {
  fed::FederationOptions options;
  options.node = config.node.name;
  options.vtep = config.node.vtep_ip;
  options.cluster = config.cluster.name;
  options.pools.pools = config.pools;   // seeds an empty store; the store's pools win after
  options.pools.hold_down_ms = config.hold_down_ms;
  options.node_ttl_s = settings_.node_ttl_seconds;
  options.block_release_after_ms = settings_.block_release_after_seconds * 1000;
  store_ = std::make_unique<fed::FederationStore>(*client_, options);
}

FederationLink::~FederationLink() = default;

void FederationLink::saw(const fed::StoreError* error) {
  if (error == nullptr) {
    const std::uint64_t id = client_->cluster_id();
    const bool replaced = cluster_id_ != 0 && id != 0 && id != cluster_id_;
    if (id != 0) cluster_id_ = id;
    if (!available_) {
      available_ = true;
      ++stats_.reconnects;
      log_->info("federation store {} answers again: re-asserting this node's networks", client_->describe());
      asio::post(io_, [this] { reconcile("reconnected"); });
    } else if (replaced) {
      log_->warn("federation store {} is a different cluster now (cluster id changed): re-asserting this node's networks",
                 client_->describe());
      asio::post(io_, [this] { reconcile("store replaced"); });
    }
    return;
  }
  if (error->code != fed::Code::unavailable) return;
  ++stats_.unavailable;
  if (available_) {
    available_ = false;
    log_->warn("{}; networks and pods this node has keep working, new networks and blocks wait for it", error->message);
  }
}

Result<NetworkGrant> FederationLink::join(const NetworkConfig& network, v1::ErrorCode* code) {
  fed::NetworkRequest request{network.name, network.labels, network.pinned_vni, network.subnet, block_length_of(network)};
  auto joined = store_->join(request, system_unix_ms());
  saw(joined ? nullptr : &joined.store_error());
  if (!joined) {
    if (code) *code = api_code(joined.code());
    if (joined.code() == fed::Code::unavailable)
      return make_error("network '" + network.name + "' needs the federation store, and " + joined.error() +
                        " (networks this node has keep working; try again when it is back)");
    return make_error(joined.error());
  }
  if (code) *code = v1::OK;
  log_->info("federation: network '{}' has VNI {}, this node's block {}", network.name, joined->vni, joined->block);
  return NetworkGrant{joined->vni, joined->pool, joined->block};
}

void FederationLink::left(const std::string& network) {
  auto ok = store_->leave(network, system_unix_ms());
  saw(ok ? nullptr : &ok.store_error());
  if (!ok) log_->warn("federation: leaving network '{}' is not recorded yet ({}); the next reconcile does it", network, ok.error());
}

void FederationLink::start() {
  auto registered = store_->register_node(system_unix_ms());
  saw(registered ? nullptr : &registered.store_error());
  if (registered)
    log_->info("federation: node '{}' registered with {} (lease {}, {} s)", node_, client_->describe(), store_->lease(),
               settings_.node_ttl_seconds);
  else
    log_->warn("federation: node '{}' could not register yet: {}", node_, registered.error());
  asio::post(io_, [this] { reconcile("start"); });
  schedule_keep_alive();
  schedule_reconcile();
}

void FederationLink::stop() {
  stopped_ = true;
  keep_alive_timer_.cancel();
  reconcile_timer_.cancel();
}

void FederationLink::schedule_keep_alive() {
  const unsigned period_s = available_ ? std::max(1u, settings_.node_ttl_seconds / 3) : 1;
  keep_alive_timer_.expires_after(std::chrono::seconds(period_s));
  keep_alive_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    auto alive = store_->keep_alive(system_unix_ms());
    saw(alive ? nullptr : &alive.store_error());
    if (!alive && alive.code() != fed::Code::unavailable) log_->error("federation: keep-alive: {}", alive.error());
    schedule_keep_alive();
  });
}

void FederationLink::schedule_reconcile() {
  reconcile_timer_.expires_after(std::chrono::seconds(settings_.reconcile_interval_seconds));
  reconcile_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    reconcile("periodic");
    schedule_reconcile();
  });
}

void FederationLink::reconcile(const char* why) {
  if (state_ == nullptr || stopped_) return;
  const std::uint64_t now = system_unix_ms();
  std::vector<fed::Membership> local;
  for (const auto& n : state_->local_networks())
    local.push_back(fed::Membership{n.config.name, n.vni, n.pool, n.config.labels, block_length_of(n.config), n.block});
  auto report = store_->reconcile(local, now);
  saw(report ? nullptr : &report.store_error());
  if (!report) {
    if (report.code() != fed::Code::unavailable) log_->error("federation: reconcile ({}): {}", why, report.error());
    return;
  }
  ++stats_.reconciles;
  stats_.restored += report->restored;
  stats_.conflicts += report->conflicts.size();
  for (const auto& c : report->conflicts) log_->error("federation: {}", c);
  if (report->restored > 0 || report->left > 0)
    log_->info("federation: reconcile ({}): {} records restored from this node's copy, {} memberships left", why,
               report->restored, report->left);
  if (state_->pending_count() > 0)
    for (const auto& note : state_->retry_pending()) log_->info("federation: {}", note);
  // Gone nodes and ended hold-downs: one node (the collector) scans for the federation.
  auto collector = store_->collector();
  saw(collector ? nullptr : &collector.store_error());
  if (!collector || !*collector) return;
  auto released = store_->collect_gone_nodes(now);
  saw(released ? nullptr : &released.store_error());
  if (released && *released > 0) {
    stats_.nodes_released += *released;
    log_->info("federation: released the blocks of {} nodes gone for over {} s", *released,
               settings_.block_release_after_seconds);
  }
  auto expired = store_->expire_hold_downs(now);
  saw(expired ? nullptr : &expired.store_error());
}

}  // namespace vxfed::control
