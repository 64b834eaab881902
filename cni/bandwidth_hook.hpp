// The `bandwidth` capability: per-pod rate limits enforced by vxfed's eBPF part (bpf/), on
// the pod's interface inside its namespace. The reference `bandwidth` plugin shapes the host
// end of a veth, but the dataplane reads the host end through AF_PACKET before tc ingress
// runs, so its egress limit would never apply to vxfed traffic: the limits live in the pod.
// Implemented over bpf/'s library in bandwidth_bpf.cpp.
#pragma once

#include <string>

#include "cni/errors.hpp"
#include "cni/netconf.hpp"

namespace vxfed::cni {

// Extra validation by the enforcing library (its ranges are stricter than the reference
// plugin's); code 7 on refusal.
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
