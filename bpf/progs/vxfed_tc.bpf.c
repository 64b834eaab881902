// SPDX-License-Identifier: GPL-2.0
/* vxfed per-pod TC programs, attached inside the pod's network namespace on the pod's
 * interface (see docs/bpf.md for why the pod side and not the host side):
 *
 *   vxfed_egress  (TC egress):  traffic-class marking (DSCP, skb->priority, 802.1p PCP of an
 *                               offloaded VLAN tag), per-class counters, and the egress rate
 *                               limit: by default the interface's root tbf qdisc holds packets
 *                               and the program only passes them; on request by earliest
 *                               departure time (skb->tstamp; needs an fq qdisc) or by a
 *                               token-bucket policer.
 *   vxfed_ingress (TC ingress): the ingress rate limit: by default a redirect to the pod's ifb,
 *                               whose tbf qdisc holds packets and hands them back to this
 *                               interface's receive path; on request a token-bucket policer.
 *
 * Why a queue by default: a token bucket that drops throws away whole TCP windows, and TCP on
 * a short path then waits for a timer with a 200 ms floor, so a 10 Mbit/s limit with a 1 Mbit
 * burst delivered 3-5 Mbit/s (docs/bpf.md). A queue delays instead, and drops only when it is
 * full, which is what a sender that does not slow down (UDP) meets.
 *
 * One object is loaded per pod; its maps are pinned under /sys/fs/bpf/vxfed/pods/<pod-key>/.
 * Built against the kernel UAPI headers only (no vmlinux.h): the programs touch nothing but
 * __sk_buff and packet bytes, so they need no CO-RE relocations.
 *
 * Bad input (non-IPv4, truncated, bad IHL, fragments, in-band VLAN tags) is never changed:
 * it passes unmarked and is counted. It still counts against the rate limits, otherwise it
 * would be a way around them.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <stddef.h>

#include "bpf/include/vxfed_bpf_abi.h"

#define NSEC_PER_SEC 1000000000ULL
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff
#define VLAN_PRIO_SHIFT 13
#define VLAN_NON_PRIO_MASK 0x1fff

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vxfed_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vxfed_rate_state);
} rate_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VXFED_MAX_RULES);
	__type(key, __u32);
	__type(value, struct vxfed_rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VXFED_CLASS_SLOTS);
	__type(key, __u32);
	__type(value, struct vxfed_counter);
} class_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VXFED_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vxfed_meta);
} meta SEC(".maps");

/* Test clock: when non-zero, the programs use it instead of bpf_ktime_get_ns() so that
 * BPF_PROG_TEST_RUN tests decide what time it is. Production loads never set it. */
__u64 vxfed_test_now_ns = 0;

static __always_inline __u64 now_ns(void)
{
	__u64 t = vxfed_test_now_ns;
	return t ? t : bpf_ktime_get_ns();
}

static __always_inline void count_stat(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += 1;
}

static __always_inline void count_class(__u32 slot, __u32 len)
{
	struct vxfed_counter *c = bpf_map_lookup_elem(&class_counters, &slot);
	if (c) {
		c->packets += 1;
		c->bytes += len;
	}
}

static __always_inline int port_in(__u16 port, __u16 lo, __u16 hi)
{
	if (lo == 0 && hi == 0)
		return 1;
	return port >= lo && port <= hi;
}

/* Finds the first rule that matches; returns its index or VXFED_CLASS_UNMATCHED. */
static __always_inline __u32 classify(__u8 proto, int has_ports, __u16 sport, __u16 dport,
				      struct vxfed_rule **out)
{
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < VXFED_MAX_RULES; i++) {
		__u32 key = i;
		struct vxfed_rule *r = bpf_map_lookup_elem(&rules, &key);
		if (!r || !r->in_use)
			continue;
		if (r->protocol && r->protocol != proto)
			continue;
		int wants_ports = r->dport_lo || r->dport_hi || r->sport_lo || r->sport_hi;
		if (wants_ports) {
			if (!has_ports)
				continue;
			if (!port_in(dport, r->dport_lo, r->dport_hi) ||
			    !port_in(sport, r->sport_lo, r->sport_hi))
				continue;
		}
		*out = r;
		return i;
	}
	return VXFED_CLASS_UNMATCHED;
}

/* Rewrites the DSCP (keeping the ECN bits) and fixes the IPv4 header checksum. */
static __always_inline int set_dscp(struct __sk_buff *skb, __u32 l3, __u8 dscp)
{
	__u16 first_word; /* version/IHL + TOS, as the checksum sees them */
	if (bpf_skb_load_bytes(skb, l3, &first_word, sizeof(first_word)) < 0)
		return 0;
	__u8 *bytes = (__u8 *)&first_word;
	__u8 old_tos = bytes[1];
	__u8 new_tos = (__u8)((dscp << 2) | (old_tos & 0x3));
	if (new_tos == old_tos)
		return 0;
	__u16 new_word = first_word;
	((__u8 *)&new_word)[1] = new_tos;
	if (bpf_l3_csum_replace(skb, l3 + offsetof(struct iphdr, check), first_word, new_word,
				sizeof(new_word)) < 0)
		return 0;
	if (bpf_skb_store_bytes(skb, l3 + offsetof(struct iphdr, tos), &new_tos, 1, 0) < 0)
		return 0;
	return 1;
}

/* Sets skb->priority and, when the VLAN tag is carried out of band (skb->vlan_present, the
 * normal case on veth and on NICs with tag offload), its 802.1p PCP. */
static __always_inline int set_priority(struct __sk_buff *skb, __u8 prio)
{
	int changed = skb->priority != prio;
	skb->priority = prio;
	if (skb->vlan_present) {
		__u32 tci = skb->vlan_tci;
		__u32 new_tci = (tci & VLAN_NON_PRIO_MASK) | ((__u32)(prio & 7) << VLAN_PRIO_SHIFT);
		if (new_tci != tci) {
			__be16 proto = (__be16)skb->vlan_proto;
			if (bpf_skb_vlan_pop(skb) == 0 &&
			    bpf_skb_vlan_push(skb, proto, (__u16)new_tci) == 0)
				changed = 1;
		}
	}
	return changed;
}

static __always_inline void mark(struct __sk_buff *skb)
{
	__be16 h_proto;
	if (bpf_skb_load_bytes(skb, offsetof(struct ethhdr, h_proto), &h_proto, sizeof(h_proto)) < 0) {
		count_stat(VXFED_STAT_MALFORMED);
		return;
	}
	if (h_proto != bpf_htons(ETH_P_IP)) {
		count_stat(VXFED_STAT_NOT_IPV4); /* IPv6, ARP, in-band 802.1Q/802.1ad ... */
		return;
	}
	struct iphdr ip;
	__u32 l3 = sizeof(struct ethhdr);
	if (bpf_skb_load_bytes(skb, l3, &ip, sizeof(ip)) < 0) {
		count_stat(VXFED_STAT_MALFORMED);
		return;
	}
	__u32 ihl_bytes = (__u32)ip.ihl * 4;
	__u32 tot_len = bpf_ntohs(ip.tot_len);
	if (ip.version != 4 || ihl_bytes < sizeof(struct iphdr)) {
		count_stat(VXFED_STAT_MALFORMED);
		return;
	}
	/* tot_len is 0 only in BIG TCP GSO packets; otherwise it must fit in the frame. */
	if (tot_len == 0 ? skb->gso_size == 0
			 : (tot_len < ihl_bytes || l3 + tot_len > skb->len)) {
		count_stat(VXFED_STAT_MALFORMED);
		return;
	}
	if (ip.frag_off & bpf_htons(IP_MF | IP_OFFSET)) {
		count_stat(VXFED_STAT_FRAGMENT); /* ports unknown in later fragments: leave all alone */
		return;
	}
	int has_ports = 0;
	__u16 sport = 0, dport = 0;
	if (ip.protocol == IPPROTO_TCP || ip.protocol == IPPROTO_UDP) {
		__be16 ports[2];
		if (bpf_skb_load_bytes(skb, l3 + ihl_bytes, ports, sizeof(ports)) < 0) {
			count_stat(VXFED_STAT_MALFORMED);
			return;
		}
		sport = bpf_ntohs(ports[0]);
		dport = bpf_ntohs(ports[1]);
		has_ports = 1;
	}
	struct vxfed_rule *rule = NULL;
	__u32 slot = classify(ip.protocol, has_ports, sport, dport, &rule);
	count_class(slot, skb->len);
	if (!rule)
		return;
	int changed = 0;
	if (rule->flags & VXFED_RULE_SET_DSCP)
		changed |= set_dscp(skb, l3, rule->dscp & 0x3f);
	if (rule->flags & VXFED_RULE_SET_PRIORITY)
		changed |= set_priority(skb, rule->priority);
	if (changed)
		count_stat(VXFED_STAT_MARKED);
}

/* Earliest departure time: each packet leaves no earlier than the time at which the
 * bytes sent before it, at the configured rate, would have left after a full burst.
 * The fq qdisc holds packets until skb->tstamp. */
static __always_inline int pace_egress(struct __sk_buff *skb, const struct vxfed_config *cfg)
{
	__u64 rate = cfg->egress_rate_bps;
	if (rate == 0)
		return TC_ACT_OK;
	__u32 key = 0;
	struct vxfed_rate_state *st = bpf_map_lookup_elem(&rate_state, &key);
	if (!st)
		return TC_ACT_OK;
	__u64 now = now_ns();
	__u64 delay = (__u64)skb->len * NSEC_PER_SEC / rate;
	__u64 burst_ns = cfg->egress_burst_bytes * NSEC_PER_SEC / rate;
	__u64 floor = now > burst_ns ? now - burst_ns : 0;

	bpf_spin_lock(&st->lock);
	__u64 next = st->egress_next_ns;
	if (next < floor)
		next = floor;
	next += delay;
	if (next > now + VXFED_EDT_HORIZON_NS) {
		bpf_spin_unlock(&st->lock);
		count_stat(VXFED_STAT_EGRESS_DROPPED);
		return TC_ACT_SHOT;
	}
	st->egress_next_ns = next;
	bpf_spin_unlock(&st->lock);

	__u64 departs = skb->tstamp > now ? skb->tstamp : now;
	if (next <= departs) {
		count_stat(VXFED_STAT_EGRESS_PASSED);
		return TC_ACT_OK;
	}
	skb->tstamp = next;
	count_stat(VXFED_STAT_EGRESS_DELAYED);
	return TC_ACT_OK;
}

/* Token bucket in byte-nanoseconds (bytes * 1e9) so the refill, elapsed_ns * rate, is exact.
 * The loader caps bursts at 4 GiB, so burst * 1e9 fits in 64 bits. A packet conforms when
 * the bucket holds its whole length; a packet that does not conform is dropped and takes no
 * tokens. */
static __always_inline int police(struct __sk_buff *skb, __u64 rate, __u64 burst_bytes, int egress)
{
	__u32 key = 0;
	struct vxfed_rate_state *st = bpf_map_lookup_elem(&rate_state, &key);
	if (!st)
		return 1;
	__u64 now = now_ns();
	__u64 full = burst_bytes * NSEC_PER_SEC;
	__u64 need = (__u64)skb->len * NSEC_PER_SEC;
	__u64 fill_ns = full / rate; /* time to refill from empty */
	int pass;

	bpf_spin_lock(&st->lock);
	__u64 tokens = egress ? st->egress_tokens : st->ingress_tokens;
	__u64 last = egress ? st->egress_last_ns : st->ingress_last_ns;
	__u64 elapsed = now > last ? now - last : 0;
	if (elapsed >= fill_ns)
		tokens = full;
	else
		tokens += elapsed * rate;
	if (tokens > full)
		tokens = full;
	if (now > last)
		last = now;
	pass = tokens >= need;
	if (pass)
		tokens -= need;
	if (egress) {
		st->egress_tokens = tokens;
		st->egress_last_ns = last;
	} else {
		st->ingress_tokens = tokens;
		st->ingress_last_ns = last;
	}
	bpf_spin_unlock(&st->lock);
	return pass;
}

SEC("tc")
int vxfed_egress(struct __sk_buff *skb)
{
	__u32 key = 0;
	struct vxfed_config *cfg = bpf_map_lookup_elem(&config, &key);
	if (!cfg)
		return TC_ACT_OK;
	if (cfg->flags & VXFED_CFG_MARK)
		mark(skb);
	if ((cfg->flags & VXFED_CFG_EGRESS_LIMIT) && cfg->egress_rate_bps &&
	    !(cfg->flags & VXFED_CFG_EGRESS_QDISC)) {
		if (!(cfg->flags & VXFED_CFG_EGRESS_POLICE))
			return pace_egress(skb, cfg);
		if (!police(skb, cfg->egress_rate_bps, cfg->egress_burst_bytes, 1)) {
			count_stat(VXFED_STAT_EGRESS_POLICED);
			return TC_ACT_SHOT;
		}
	}
	count_stat(VXFED_STAT_EGRESS_PASSED);
	return TC_ACT_OK;
}

SEC("tc")
int vxfed_ingress(struct __sk_buff *skb)
{
	__u32 key = 0;
	struct vxfed_config *cfg = bpf_map_lookup_elem(&config, &key);
	if (cfg && (cfg->flags & VXFED_CFG_INGRESS_LIMIT) && cfg->ingress_rate_bps &&
	    (cfg->flags & VXFED_CFG_INGRESS_SHAPE) && cfg->ingress_ifindex) {
		/* The ifb's tbf queues it; the ifb then hands it to this interface's receive path
		 * with tc skipped, so it is not redirected twice. */
		count_stat(VXFED_STAT_INGRESS_SHAPED);
		return bpf_redirect(cfg->ingress_ifindex, 0);
	}
	if (cfg && (cfg->flags & VXFED_CFG_INGRESS_LIMIT) && cfg->ingress_rate_bps &&
	    !police(skb, cfg->ingress_rate_bps, cfg->ingress_burst_bytes, 0)) {
		count_stat(VXFED_STAT_INGRESS_DROPPED);
		return TC_ACT_SHOT;
	}
	count_stat(VXFED_STAT_INGRESS_PASSED);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
