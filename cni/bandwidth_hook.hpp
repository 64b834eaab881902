// The `bandwidth` capability: per-pod rate limits enforced by vxfed's eBPF part (bpf/), on
// the pod's interface inside its namespace. The reference `bandwidth` plugin shapes the host
// end of a veth, but the dataplane reads the host end through AF_PACKET before tc ingress
// runs, so its egress limit would never apply to vxfed traffic: the limits live in the pod.
//
// Built against bpf/ when meson finds vxfed_bpf_dep (bandwidth_bpf.cpp); otherwise
// bandwidth_none.cpp validates the values and reports that limits are not enforced.
#pragma once

#include <string>

#include "errors.hpp"
#include "netconf.hpp"

namespace vxfed::cni {

// True when this build can enforce limits.
bool bandwidth_enforced();

// Extra validation by the enforcing library (its ranges are stricter than the reference
// plugin's); code 7 on refusal. A no-op without bpf.
Done bandwidth_validate(const NetConf& conf);

// ADD: attach limits for (container id, ifname) inside netns. A no-op without a bandwidth
// request. Fails with code 101 when the programs cannot be attached.
Done bandwidth_attach(const NetConf& conf, const std::string& container_id, const std::string& ifname,
                      const std::string& netns);
// DEL/rollback/GC: remove them; tolerant of unknown attachments.
Done bandwidth_detach(const std::string& container_id, const std::string& ifname);
// CHECK.
Done bandwidth_check(const NetConf& conf, const std::string& container_id, const std::string& ifname,
                     const std::string& netns);

}  // namespace vxfed::cni
