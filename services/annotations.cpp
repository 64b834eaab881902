#include "services/annotations.hpp"

#include <set>

#include "common/yaml/reader.hpp"
#include "policy/names.hpp"

namespace vxfed::services {

namespace {

std::string quoted(const std::string& text) { return "'" + text + "'"; }

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// The comma-separated entries of `text`, trimmed; an empty entry is an error naming `what`.
std::vector<std::string> entries(const std::string& text, const std::string& path, const std::string& expected) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty()) yaml::fail(path, quoted(text) + " has an empty entry: expected " + expected);
    out.push_back(item);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

void check_cluster(const std::string& cluster, const std::string& text, const std::string& path) {
  if (const std::string why = policy::check_dns_label(cluster); !why.empty())
    yaml::fail(path, quoted(cluster) + " in " + quoted(text) + " is not a cluster name: " + why);
}

}  // namespace

std::string key_path(const std::string& base, const std::string& key) {
  if (key.find_first_of("./") == std::string::npos) return base.empty() ? key : base + "." + key;
  return base + "[\"" + key + "\"]";
}

std::map<std::string, std::uint32_t> read_weights(const std::string& text, const std::string& path) {
  const std::string expected = "CLUSTER=WEIGHT[,CLUSTER=WEIGHT...], e.g. cluster-a=3,cluster-b=1";
  std::map<std::string, std::uint32_t> out;
  bool any_above_zero = false;
  for (const std::string& item : entries(text, path, expected)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) yaml::fail(path, quoted(item) + " has no '=': expected " + expected);
    const std::string cluster = trim(item.substr(0, eq));
    const std::string weight = trim(item.substr(eq + 1));
    check_cluster(cluster, text, path);
    bool digits = !weight.empty() && weight.size() <= 4;
    for (char c : weight) digits = digits && c >= '0' && c <= '9';
    const unsigned long value = digits ? std::stoul(weight) : 0;
    if (!digits || value > kMaxClusterWeight)
      yaml::fail(path, "weight " + quoted(weight) + " of cluster " + quoted(cluster) + " must be an integer 0.." +
                           std::to_string(kMaxClusterWeight));
    if (!out.emplace(cluster, static_cast<std::uint32_t>(value)).second)
      yaml::fail(path, "cluster " + quoted(cluster) + " is given twice in " + quoted(text));
    any_above_zero = any_above_zero || value > 0;
  }
  if (!any_above_zero) yaml::fail(path, quoted(text) + ": at least one weight must be above 0 (else no backend could be picked)");
  return out;
}

std::vector<std::string> read_failover_order(const std::string& text, const std::string& path) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& cluster : entries(text, path, "CLUSTER[,CLUSTER...], e.g. cluster-a,cluster-b")) {
    check_cluster(cluster, text, path);
    if (!seen.insert(cluster).second) yaml::fail(path, "cluster " + quoted(cluster) + " is given twice in " + quoted(text));
    out.push_back(cluster);
  }
  return out;
}

StrategySpec read_strategy(const std::map<std::string, std::string>& annotations, const std::string& annotations_path) {
  StrategySpec out;
  const auto find = [&](const char* key) -> const std::string* {
    const auto it = annotations.find(key);
    return it == annotations.end() ? nullptr : &it->second;
  };
  const std::string strategy_path = key_path(annotations_path, kStrategyAnnotation);
  const std::string weights_path = key_path(annotations_path, kWeightsAnnotation);
  const std::string order_path = key_path(annotations_path, kFailoverOrderAnnotation);
  if (const std::string* s = find(kStrategyAnnotation)) {
    if (*s == "LocalFirst") out.strategy = Strategy::LocalFirst;
    else if (*s == "WeightedRoundRobin") out.strategy = Strategy::WeightedRoundRobin;
    else if (*s == "FailoverOnly") out.strategy = Strategy::FailoverOnly;
    else yaml::fail(strategy_path, "unknown strategy " + quoted(*s) + ": must be LocalFirst, WeightedRoundRobin or FailoverOnly");
  }
  const std::string* weights = find(kWeightsAnnotation);
  const std::string* order = find(kFailoverOrderAnnotation);
  const std::string name = strategy_name(out.strategy);
  if (weights) {
    if (out.strategy != Strategy::WeightedRoundRobin)
      yaml::fail(weights_path, "is read with strategy WeightedRoundRobin only (the strategy is " + name + ")");
    out.weights = read_weights(*weights, weights_path);
  }
  if (order) {
    if (out.strategy != Strategy::FailoverOnly)
      yaml::fail(order_path, "is read with strategy FailoverOnly only (the strategy is " + name + ")");
    out.failover_order = read_failover_order(*order, order_path);
  } else if (out.strategy == Strategy::FailoverOnly) {
    yaml::fail(order_path, "is required with strategy FailoverOnly: the clusters in the order they serve, "
                           "e.g. cluster-a,cluster-b");
  }
  return out;
}

std::optional<net::Ipv4Addr> read_vip(const std::map<std::string, std::string>& annotations,
                                      const std::string& annotations_path) {
  const auto it = annotations.find(kVipAnnotation);
  if (it == annotations.end()) return std::nullopt;
  auto vip = net::Ipv4Addr::parse(it->second);
  if (!vip) yaml::fail(key_path(annotations_path, kVipAnnotation), quoted(it->second) + " is not an IPv4 address: " + vip.error());
  return *vip;
}

const char* strategy_name(Strategy strategy) {
  switch (strategy) {
    case Strategy::LocalFirst: return "LocalFirst";
    case Strategy::WeightedRoundRobin: return "WeightedRoundRobin";
    case Strategy::FailoverOnly: return "FailoverOnly";
  }
  return "?";
}

const char* protocol_name(Protocol protocol) { return protocol == Protocol::Udp ? "UDP" : "TCP"; }

}  // namespace vxfed::services
