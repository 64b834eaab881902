// The default rate limits: a tbf qdisc that holds packets instead of dropping them. Pod
// egress: the pod interface's root qdisc (TC egress runs before it). Pod ingress: the root of
// an ifb device in the pod's namespace, which the ingress program redirects to and which hands
// each packet back to the pod interface's receive path. Why a queue: docs/bpf.md, "Rate limits".
// The netlink calls act on the current network namespace: call them inside run_in_netns.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.hpp"

namespace vxfed::bpf::detail {

struct TbfParams {
  uint64_t rate_bytes = 0;   // bytes/s
  uint32_t burst_bytes = 0;  // the bucket
  uint32_t limit_bytes = 0;  // the queue behind it: burst + kTbfQueueNs at the rate
};

// How long the queue may hold packets beyond the burst, at the rate (the reference bandwidth
// plugin's figure). Long enough for TCP's cwnd halving not to empty it, short enough that a
// UDP flood waits at most this long.
inline constexpr uint64_t kTbfQueueNs = 25'000'000;

// Pure. The bucket is at least one frame of the interface (tbf drops a frame larger than its
// bucket), the burst otherwise; rates and bursts in the CNI's bits.
TbfParams tbf_params(uint64_t rate_bits, uint64_t burst_bits, uint32_t mtu);

// The pod's ifb for the interface with this ifindex: "vxin<ifindex>" (at most 14 characters).
std::string ifb_name_for(int ifindex);

// Replaces the root qdisc of ifindex with tbf (or changes the tbf there in place).
Status install_root_tbf(int ifindex, const TbfParams& p);
// Creates the ifb (or finds ours), sets its MTU and brings it up; returns its ifindex.
Result<int> ensure_ifb(const std::string& name, uint32_t mtu);
// Removes a link by name; an absent link is fine.
Status delete_link(const std::string& name);
// The MTU of ifindex.
Result<uint32_t> link_mtu(int ifindex);

}  // namespace vxfed::bpf::detail
