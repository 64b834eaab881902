// SPDX-License-Identifier: GPL-2.0
/* Test helper for bpf_pod_limits.py: pushes an out-of-band 802.1Q tag (VID 100, PCP 0) on
 * every frame and lets the next filter run, so vxfed_egress (attached after it) sees
 * skb->vlan_present as it would behind a VLAN device (this kernel has no 8021q module). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int vlan_push(struct __sk_buff *skb)
{
	if (!skb->vlan_present)
		bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 100);
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "GPL";
