// What the runtime asked for the pod: a MAC and addresses, from the three places runtimes put
// them (CONVENTIONS.md of the CNI project), validated without I/O.
//
//   CNI_ARGS            MAC=0a:58:0a:f4:01:05;IP=10.244.7.7[,10.244.7.8]   (podman, CRI-O annotations)
//   runtimeConfig       "mac": "..", "ips": ["10.244.7.7/16"]           (capabilities mac, ips)
//   args in the config  "args": {"cni": {"mac": "..", "ips": ["10.244.7.7"]}}
//
// The MAC: runtimeConfig wins over CNI_ARGS, CNI_ARGS over args (the reference tuning
// plugin's order). The addresses go to IPAM unchanged (host-local and static read all three);
// vxfed only checks that what IPAM assigned is one of them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cni/env.hpp"
#include "cni/errors.hpp"
#include "cni/netconf.hpp"
#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"

namespace vxfed::cni {

struct Requested {
  std::optional<net::Mac> mac;
  std::string mac_source;               // "runtimeConfig.mac", "CNI_ARGS MAC", "args.cni.mac"
  std::vector<net::Ipv4Addr> ips;       // IPv4 addresses asked for, from every source
  std::string ips_source;               // where they came from, for messages
};

// Codes: 4 for a malformed CNI_ARGS value, 7 for one in the config (args, runtimeConfig).
Expected<Requested> requested(const NetConf& conf, const CniEnv& env);

}  // namespace vxfed::cni
