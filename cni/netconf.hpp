// The vxfed network configuration read from stdin (SPEC.md "Network configuration"), parsed
// and validated without I/O. docs/cni.md documents every field with examples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni/errors.hpp"
#include "cni/cni_result.hpp"
#include "cni/version.hpp"
#include "common/net/ipv4.hpp"

namespace vxfed::cni {

inline constexpr const char* kDefaultSocket = "/run/vxfed/vxfedd.sock";
inline constexpr const char* kDefaultStateDir = "/var/lib/cni/vxfed";

// The `bandwidth` capability (runtimeConfig.bandwidth): rates in bit/s, bursts in bits, as the
// reference bandwidth plugin reads them.
struct Bandwidth {
  std::uint64_t ingress_rate = 0, ingress_burst = 0;
  std::uint64_t egress_rate = 0, egress_burst = 0;
};

struct Attachment {
  std::string container_id;
  std::string ifname;
  bool operator==(const Attachment&) const = default;
  auto operator<=>(const Attachment&) const = default;
};

struct NetConf {
  std::string cni_version;
  SpecVersion version;
  std::string name;
  std::string type;
  std::string network;                        // vxfed network; default: name
  std::uint32_t mtu = 0;                      // 0: the network's MTU from vxfedd
  std::string ipam_type;                      // empty: no ipam section
  std::string socket = kDefaultSocket;        // vxfedd's control socket
  std::string state_dir = kDefaultStateDir;   // attachment records, pending detaches, lock
  std::string log_file;                       // empty: stderr
  std::string log_level = "warn";
  std::uint32_t timeout_ms = 5000;            // per vxfedd request
  std::uint32_t dataplane_timeout_ms = 5000;  // ADD: how long vxfedd may wait for the dataplane to take the pod
  // The global services' VIP range(s) (vxfedd's services.range): routed via the network's
  // gateway like the remote cluster CIDRs, so VIP traffic enters the dataplane, which
  // translates it. Empty: no service route.
  std::vector<net::Ipv4Prefix> service_cidrs;
  std::optional<std::string> runtime_mac;     // runtimeConfig.mac, validated
  std::optional<Bandwidth> bandwidth;         // runtimeConfig.bandwidth, validated
  std::optional<CniResult> prev_result;
  std::vector<Attachment> valid_attachments;  // GC: cni.dev/valid-attachments (+ cni.dev/attachments)
  bool has_valid_attachments = false;
  nlohmann::json raw;                         // the whole config: what IPAM receives on stdin
};

// Parses stdin. Codes: 6 not JSON; 1 unsupported cniVersion; 7 missing or invalid fields
// (including a type or ipam.type naming a path); 2 a field we cannot honour.
Expected<NetConf> parse_netconf(const std::string& stdin_text);

// Only the cniVersion, for VERSION (whose stdin may be empty or minimal).
std::optional<std::string> peek_version(const std::string& stdin_text);

// Reference-plugin rules for one rate/burst pair; error text or nullopt.
std::optional<std::string> validate_rate_and_burst(std::uint64_t rate, std::uint64_t burst);

// DNS-label style network name, as vxfedd's NetworkSpec.name.
bool valid_network_name(const std::string& name);

// The config to hand the IPAM plugin: the same bytes in meaning, with cniVersion lowered to
// `version` when the plugin predates ours.
std::string ipam_stdin(const NetConf& conf, const std::string& version);

}  // namespace vxfed::cni
