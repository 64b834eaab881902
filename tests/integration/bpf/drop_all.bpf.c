// SPDX-License-Identifier: GPL-2.0
/* Test helper for bpf_attach_point.py: a TC program that drops everything, to show which
 * packets an AF_PACKET socket still sees or sends around TC on a veth end. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int drop_all(struct __sk_buff *skb)
{
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "GPL";
