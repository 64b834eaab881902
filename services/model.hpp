// The global-service model (docs/services.md): the Kubernetes objects vxfed reads for a service
// served from several clusters, as plain values. The parser (services/parse.hpp) fills them
// from YAML and checks each object alone; services/validate.hpp checks them against each other
// and against the federation (cluster CIDRs, the service range); everything after takes them
// as given.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"

namespace vxfed::services {

// A service's identity across the federation: the same namespace/name exported from several
// clusters is one service (the MCS API's "namespace sameness").
struct ServiceKey {
  std::string namespace_name;
  std::string name;
  std::string str() const { return namespace_name + "/" + name; }
  auto operator<=>(const ServiceKey&) const = default;
};

enum class Protocol : std::uint8_t { Tcp = 6, Udp = 17 };  // IP protocol numbers
const char* protocol_name(Protocol protocol);               // "TCP", "UDP"

// LocalFirst: the caller's cluster while it has a ready backend, else every other ready one.
// WeightedRoundRobin: every ready backend, each cluster's weight split over its backends.
// FailoverOnly: the first cluster of failover-order that has a ready backend.
enum class Strategy { LocalFirst, WeightedRoundRobin, FailoverOnly };
const char* strategy_name(Strategy strategy);

// The strategy annotations, read and checked (docs/services.md, "Annotations").
struct StrategySpec {
  Strategy strategy = Strategy::WeightedRoundRobin;  // the default: spread like Cilium's and MCS's
  // WeightedRoundRobin only. Empty: every ready backend weighs the same. Otherwise a
  // cluster's weight (0..kMaxClusterWeight) split evenly over its ready backends; a cluster
  // not listed gets 0 (no traffic), as an unlisted locality in Istio's weighted distribution.
  std::map<std::string, std::uint32_t> weights;
  std::vector<std::string> failover_order;  // FailoverOnly only (required there)
  bool operator==(const StrategySpec&) const = default;
};
inline constexpr std::uint32_t kMaxClusterWeight = 1000;

// One entry of spec.ports. target_port defaults to port (as Kubernetes does).
struct ServicePort {
  std::string name;  // may be empty when the Service has one port
  Protocol protocol = Protocol::Tcp;
  std::uint16_t port = 0;
  std::uint16_t target_port = 0;
  bool operator==(const ServicePort&) const = default;
};

// A v1 Service of type ClusterIP with sessionAffinity None, as one cluster holds it.
struct Service {
  std::string cluster;  // the cluster the apply was for
  ServiceKey key;
  std::vector<ServicePort> ports;
  StrategySpec strategy;
  std::optional<net::Ipv4Addr> pinned_vip;  // annotation vxfed.io/vip: this VIP or refuse
  std::string source_path;  // where it was in the input ("documents[0]"), for later errors
};

// A discovery.k8s.io/v1 EndpointSlice: some of a service's backends in one cluster.
struct EndpointPort {
  std::string name;
  Protocol protocol = Protocol::Tcp;
  std::uint16_t port = 0;  // the port the backends listen on (the Service's targetPort)
};
struct Endpoint {
  std::vector<net::Ipv4Addr> addresses;
  bool ready = true;  // conditions.ready; absent means ready (as Kubernetes says)
};
struct EndpointSlice {
  std::string cluster;         // multicluster.kubernetes.io/source-cluster, else the apply's
  std::string namespace_name;
  std::string name;
  std::string service_name;    // kubernetes.io/service-name
  std::vector<EndpointPort> ports;
  std::vector<Endpoint> endpoints;
  std::string source_path;
};

// A multicluster.x-k8s.io/v1alpha1 ServiceExport: the cluster exports its Service of the same
// namespace/name to the federation.
struct ServiceExport {
  std::string cluster;  // the cluster the apply was for
  ServiceKey key;
  std::int64_t created_s = 0;  // metadata.creationTimestamp, seconds since the epoch (UTC)
  std::string created_text;    // as written, for messages
  std::string source_path;
};

// What one apply carries, in input order.
struct Objects {
  std::vector<Service> services;
  std::vector<EndpointSlice> slices;
  std::vector<ServiceExport> exports;
};

// The annotations and labels vxfed reads.
inline constexpr const char* kStrategyAnnotation = "vxfed.io/strategy";
inline constexpr const char* kWeightsAnnotation = "vxfed.io/weights";
inline constexpr const char* kFailoverOrderAnnotation = "vxfed.io/failover-order";
inline constexpr const char* kVipAnnotation = "vxfed.io/vip";
inline constexpr const char* kServiceNameLabel = "kubernetes.io/service-name";
inline constexpr const char* kSourceClusterLabel = "multicluster.kubernetes.io/source-cluster";

}  // namespace vxfed::services
