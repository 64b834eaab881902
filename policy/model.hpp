// The network-policy model: the Kubernetes objects vxfed reads, as plain values (docs/policy.md).
// The parser (policy/parse.hpp) fills them from YAML and validates them; everything else in
// policy/ takes them as given. Only what enforcement needs is kept: of a Pod or a Namespace
// its metadata's name, namespace, labels and annotations.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"

namespace vxfed::policy {

using Labels = std::map<std::string, std::string>;  // sorted: iteration order is canonical

enum class Operator { In, NotIn, Exists, DoesNotExist };

// One matchExpressions entry. values is non-empty for In/NotIn and empty otherwise (checked
// by the parser, as the API server does).
struct Requirement {
  std::string key;
  Operator op = Operator::Exists;
  std::vector<std::string> values;
};

// A Kubernetes LabelSelector: every matchLabels pair and every requirement must hold. The
// empty selector ({}) matches every label set.
struct LabelSelector {
  Labels match_labels;
  std::vector<Requirement> match_expressions;
  bool empty() const { return match_labels.empty() && match_expressions.empty(); }
};

// IP protocol numbers, as the forwarder will read them from the packet.
enum class Protocol : std::uint8_t { Tcp = 6, Udp = 17 };

// One entry of a rule's ports. No port = every port of the protocol; end_port makes the
// range port..end_port (end_port >= port, checked).
struct Port {
  Protocol protocol = Protocol::Tcp;
  std::optional<std::uint16_t> port;
  std::optional<std::uint16_t> end_port;
};

struct IpBlock {
  net::Ipv4Prefix cidr;
  std::vector<net::Ipv4Prefix> except;  // each strictly inside cidr
};

// One entry of from/to: either ip_block, or a pod and/or namespace selector (both = AND).
struct Peer {
  std::optional<LabelSelector> pod_selector;
  std::optional<LabelSelector> namespace_selector;
  std::optional<IpBlock> ip_block;
};

// An ingress or egress rule. No peers = every peer; no ports = every protocol and port.
struct Rule {
  std::vector<Peer> peers;
  std::vector<Port> ports;
};

// A NetworkAttachmentDefinition named by the policy-for annotation.
struct NadRef {
  std::string namespace_name;
  std::string name;
  auto operator<=>(const NadRef&) const = default;
};

// A MultiNetworkPolicy (k8s.cni.cncf.io/v1beta1), with Kubernetes' defaults applied.
struct Policy {
  std::string cluster;         // the cluster it was applied for: it selects pods there only
  std::string namespace_name;
  std::string name;
  std::vector<NadRef> policy_for;
  LabelSelector pod_selector;  // {} selects every pod of the namespace
  bool ingress_type = false;   // policyTypes has Ingress (the default)
  bool egress_type = false;    // policyTypes has Egress (the default when egress is non-empty)
  std::vector<Rule> ingress;
  std::vector<Rule> egress;
};

struct Namespace {
  std::string cluster;
  std::string name;
  Labels labels;
  std::map<std::string, std::string> annotations;
};

struct Pod {
  std::string cluster;
  std::string namespace_name;
  std::string name;
  Labels labels;
  std::map<std::string, std::string> annotations;
};

// What one apply carries, in input order.
struct Objects {
  std::vector<Policy> policies;
  std::vector<Namespace> namespaces;
  std::vector<Pod> pods;
};

}  // namespace vxfed::policy
