// TC plumbing on one interface of the current network namespace: the clsact hooks with our
// cls_bpf filters, and the fq root qdisc that EDT pacing needs. Call inside run_in_netns.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.hpp"

namespace vxfed::bpf::detail {

enum class Hook { ingress, egress };

// Attaches prog_fd (direct action) at the hook, replacing our previous filter if there is one.
Status tc_attach(int ifindex, Hook hook, int prog_fd);
// Removes our filter from the hook; absent filter or hook is fine.
Status tc_detach(int ifindex, Hook hook);
// The id of the program in our filter at the hook, or 0 when there is none.
Result<uint32_t> tc_attached_prog_id(int ifindex, Hook hook);

// The kind of the root qdisc ("fq", "noqueue", "mq" ...).
Result<std::string> root_qdisc_kind(int ifindex);
// The root qdisc: its kind and the packets it dropped (the tbf of a shaped limit drops what
// overflows its queue: the rate limit's drops, counted as the policer's were).
struct RootQdisc {
  std::string kind;
  std::uint64_t drops = 0;
};
Result<RootQdisc> root_qdisc(int ifindex);
// Replaces the root qdisc with fq (default parameters; fq honours skb->tstamp). When the
// kernel has no fq (CONFIG_NET_SCH_FQ off), *unsupported is set and an error returned.
Status install_root_fq(int ifindex, bool* unsupported);
// Deletes the root qdisc (the device falls back to its default).
Status delete_root_qdisc(int ifindex);

}  // namespace vxfed::bpf::detail
