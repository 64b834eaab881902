// The CNI_* environment a runtime passes, parsed and validated without touching the process
// environment (the lookup is injected so unit tests feed tables of cases).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cni/errors.hpp"

namespace vxfed::cni {

enum class Command { kAdd, kDel, kCheck, kVersion, kGc, kStatus };

const char* command_name(Command c);

struct CniEnv {
  Command command = Command::kVersion;
  std::string container_id;
  std::string netns;                          // may be empty for DEL
  std::string ifname;
  std::string args;                           // CNI_ARGS as given
  std::map<std::string, std::string> arg_map; // CNI_ARGS parsed
  std::vector<std::string> path;              // CNI_PATH split on ':'
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Parses and validates: required variables per command (SPEC.md "Parameters"), the container
// id's alphabet, the interface name's length and characters, CNI_ARGS syntax. Errors use code
// 4 (invalid environment variables).
Expected<CniEnv> parse_env(const EnvLookup& lookup);

// Checks done by parse_env, exposed for tests and for GC's attachment list.
std::optional<std::string> validate_container_id(const std::string& id);  // error text or nullopt
std::optional<std::string> validate_ifname(const std::string& name);

// "IgnoreUnknown=true;K8S_POD_NAMESPACE=ns" -> map. Keys we do not know are refused unless
// IgnoreUnknown is true/1 (the reference plugins' rule). Known: the K8S_POD_* keys, MAC and
// IP (cni/requested.hpp).
Expected<std::map<std::string, std::string>> parse_cni_args(const std::string& args);

// The K8S_POD_* keys we copy into vxfedd's EndpointSpec.pod.
const std::vector<std::string>& pod_arg_keys();

}  // namespace vxfed::cni
