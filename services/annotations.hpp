// The strategy annotations of a Service (docs/services.md, "Annotations"), read from the
// annotation map as kubectl prints it. Pure; each reader reports through yaml::fail with the
// annotation's path, so the parser collects it like any other field error.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/net/ipv4.hpp"
#include "services/model.hpp"

namespace vxfed::services {

// vxfed.io/strategy, vxfed.io/weights and vxfed.io/failover-order together: the strategy
// (default WeightedRoundRobin), weights only with WeightedRoundRobin, failover-order required
// with FailoverOnly and refused with the others (an annotation that does nothing would let a
// typo in the strategy pass unnoticed). `annotations_path` is "metadata.annotations" as the
// input has it (paths read metadata.annotations["vxfed.io/weights"]).
StrategySpec read_strategy(const std::map<std::string, std::string>& annotations, const std::string& annotations_path);

// "cluster-a=3,cluster-b=1": DNS-label clusters, each once, integer weights 0..1000, at least
// one above 0. Blanks around entries are allowed. `path` names the field in errors.
std::map<std::string, std::uint32_t> read_weights(const std::string& text, const std::string& path);

// "cluster-a,cluster-b": DNS-label clusters, each once, at least one.
std::vector<std::string> read_failover_order(const std::string& text, const std::string& path);

// vxfed.io/vip: an IPv4 address (checked against the service range by validate()).
std::optional<net::Ipv4Addr> read_vip(const std::map<std::string, std::string>& annotations,
                                      const std::string& annotations_path);

// The path of an annotation or label key under `base`: base["vxfed.io/weights"].
std::string key_path(const std::string& base, const std::string& key);

}  // namespace vxfed::services
