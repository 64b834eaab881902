// Global services into the dataplane's Service entries (docs/services.md, "Serving a VIP"):
// for every federated service, the backends its strategy allows now for this node's cluster,
// where a backend counts when it is ready and this node can reach it (a local endpoint has its
// address, or a route in effect covers it: its node's block withdrawn by BGP/BFD, or its pod
// detached, takes it out), weighted; and at weight 0 the other backends that are ready and
// reached, so that flows they have stay on them after a failback ("Flows stay"). Pure: no
// I/O, no clock; vxfedd feeds it the store's listings, route and endpoint changes and network
// changes, and hands the entries it returns to NodeState (which publishes only those that
// differ from what the dataplane holds).
//
// Which network a service lives on: every service on the one vxfed network named by the
// config's services.network (the node's only network when it has one and the key is left
// out). The VIP range is one for the federation, so one network per federation for now.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "proto/dataplane.pb.h"
#include "services/federate.hpp"
#include "services/select.hpp"

namespace vxfed::control {

namespace dp = ::vxfed::dataplane::v1;

// A backend as this node sees it.
enum class BackendState { ready, not_ready, node_down };
const char* backend_state_name(BackendState state);  // "ready", "not ready", "node down"

struct BackendView {
  std::string cluster;
  net::Ipv4Addr address;
  BackendState state = BackendState::ready;
  bool allowed = false;      // the strategy gives it new flows from this node now
  std::uint32_t weight = 0;  // its share when allowed
  // In the entry at weight 0: ready and reached but not allowed now (the strategy prefers
  // another side), kept so that the flows it has stay on it.
  bool kept = false;
};

struct ServiceView {
  services::ServiceKey key;
  std::string strategy;
  std::optional<net::Ipv4Addr> vip;
  std::optional<dp::Service> entry;  // what the dataplane gets; absent: not programmed (why)
  std::string not_programmed;
  std::string kept_left_out;  // when backends that should be kept did not fit the forwarder's limit
  std::vector<BackendView> backends;  // as FederatedService::backends
};

// What the compile needs to know of this node.
struct ServiceNode {
  std::string cluster;
  std::optional<std::uint32_t> vni;  // the services' network's VNI here; none: not served
  std::function<bool(std::uint32_t vni, net::Ipv4Addr address)> reaches;
};

// One service: its view and, when it has a VIP and the node serves its network, its entry.
ServiceView compile_service(const services::FederatedService& service, const ServiceNode& node);

class ServiceProgrammer {
 public:
  struct Changes {
    std::vector<dp::Service> upserts;
    std::vector<std::string> removals;  // ids
    bool empty() const { return upserts.empty() && removals.empty(); }
  };
  // `node` is asked at every compile (the VNI may change with a network added or removed).
  explicit ServiceProgrammer(std::function<ServiceNode()> node) : node_(std::move(node)) {}

  // A new listing of the store: services new or changed are compiled, gone ones removed.
  Changes set_federated(const services::FederatedSet& set);
  // Reachability changed for addresses in `prefix` of `vni`: only the services with a backend
  // inside it are compiled again (backends are indexed by address).
  Changes reach_changed(std::uint32_t vni, const net::Ipv4Prefix& prefix);
  // The network (its VNI, or whether the node serves it) may have changed: every service.
  Changes recompile_all();

  const std::map<services::ServiceKey, ServiceView>& views() const { return views_; }
  std::uint64_t compiles() const { return compiles_; }  // services compiled so far

 private:
  void compile(const services::ServiceKey& key, const ServiceNode& node, Changes& changes);
  void index(const services::FederatedService& service, bool add);

  std::function<ServiceNode()> node_;
  std::map<services::ServiceKey, services::FederatedService> services_;
  std::map<services::ServiceKey, ServiceView> views_;
  std::map<std::uint32_t, std::set<services::ServiceKey>> by_backend_;  // backend address -> services
  std::uint64_t compiles_ = 0;
};

}  // namespace vxfed::control
