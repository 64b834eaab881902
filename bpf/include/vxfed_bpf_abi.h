/* The layout shared by the TC programs (bpf/progs/vxfed_tc.bpf.c) and the C++ loader (bpf/lib).
 *
 * Plain C with fixed-width kernel types so that both clang -target bpf and the host C++
 * compiler read the same structs. Every struct is a map value: its size is part of the ABI of
 * the pinned maps, so a change here must bump VXFED_BPF_ABI_VERSION (the loader refuses to
 * reuse pins written by another version and re-creates them instead).
 */
#ifndef VXFED_BPF_ABI_H
#define VXFED_BPF_ABI_H

#include <linux/types.h>
#include <linux/bpf.h> /* struct bpf_spin_lock */

#define VXFED_BPF_ABI_VERSION 2

/* Match rules for traffic-class marking; first match wins. */
#define VXFED_MAX_RULES 16
/* Class counter slots: one per rule, plus the last one for IPv4 packets no rule matched. */
#define VXFED_CLASS_SLOTS (VXFED_MAX_RULES + 1)
#define VXFED_CLASS_UNMATCHED VXFED_MAX_RULES

/* Packets that would wait longer than this for their departure time are dropped instead
 * of queued (bounds the fq queue; fq's own horizon is 10 s). */
#define VXFED_EDT_HORIZON_NS 2000000000ULL

/* The tc filter identity used on both hooks (cls_bpf, direct action). */
#define VXFED_TC_HANDLE 0x7846
#define VXFED_TC_PRIORITY 0x7846

/* vxfed_config.flags */
#define VXFED_CFG_EGRESS_LIMIT  (1u << 0) /* limit pod egress: EDT, or police if the flag below */
#define VXFED_CFG_INGRESS_LIMIT (1u << 1) /* police pod ingress (token bucket) */
#define VXFED_CFG_MARK          (1u << 2) /* apply the marking rules */
#define VXFED_CFG_EGRESS_POLICE (1u << 3) /* egress by token-bucket drops: no fq qdisc here */
/* Shaping by a queue (docs/bpf.md, "Rate limits"): a token bucket that drops makes TCP wait
 * for its 200 ms timers, so by default the limits are a tbf qdisc's, which holds packets: */
#define VXFED_CFG_EGRESS_QDISC  (1u << 4) /* egress: the pod interface's root tbf limits; pass */
#define VXFED_CFG_INGRESS_SHAPE (1u << 5) /* ingress: redirect to the pod's ifb (ingress_ifindex) */

/* Per-pod configuration: array map "config", one entry. Rates in bytes per second and
 * bursts in bytes (the loader converts from the CNI's bits). */
struct vxfed_config {
	__u32 flags;
	__u32 abi_version;
	__u64 egress_rate_bps;     /* bytes/s */
	__u64 egress_burst_bytes;
	__u64 ingress_rate_bps;    /* bytes/s */
	__u64 ingress_burst_bytes;
	__u32 ingress_ifindex;     /* VXFED_CFG_INGRESS_SHAPE: the ifb whose tbf holds ingress */
	__u32 pad;
};

/* vxfed_rule.flags */
#define VXFED_RULE_SET_DSCP     (1u << 0)
#define VXFED_RULE_SET_PRIORITY (1u << 1) /* skb->priority, and the 802.1p PCP of an offloaded VLAN tag */

/* One marking rule: array map "rules", VXFED_MAX_RULES entries; entries with
 * in_use == 0 are skipped. protocol 0 matches TCP and UDP (ports) or anything (no ports). */
struct vxfed_rule {
	__u8 in_use;
	__u8 protocol;   /* IPPROTO_TCP, IPPROTO_UDP, or 0 = any */
	__u8 dscp;       /* 0..63 */
	__u8 priority;   /* 0..7: skb->priority and 802.1p PCP */
	__u32 flags;
	__u16 dport_lo;  /* host order; 0/0 matches any port */
	__u16 dport_hi;
	__u16 sport_lo;
	__u16 sport_hi;
	char name[16];   /* class name, for counters; NUL-terminated */
};

/* Per-class counters: per-CPU array map "class_counters", VXFED_CLASS_SLOTS entries. */
struct vxfed_counter {
	__u64 packets;
	__u64 bytes;
};

/* Program statistics by outcome: per-CPU array map "stats", VXFED_STAT_MAX entries.
 * One list, one order: the C++ side names them from the same X-macro. */
#define VXFED_STAT_LIST(X)                                                   \
	X(EGRESS_PASSED, "egress_passed")        /* sent without delay */        \
	X(EGRESS_DELAYED, "egress_delayed")      /* given a later departure */   \
	X(EGRESS_DROPPED, "egress_dropped_horizon") /* beyond the EDT horizon */ \
	X(INGRESS_PASSED, "ingress_passed")                                      \
	X(INGRESS_DROPPED, "ingress_dropped_rate") /* token bucket empty */      \
	X(EGRESS_POLICED, "egress_dropped_rate") /* egress token bucket empty */ \
	X(MARKED, "marked")                      /* DSCP or priority changed */  \
	X(NOT_IPV4, "not_ipv4")                  /* IPv6, ARP, VLAN in-band ... */ \
	X(MALFORMED, "malformed")                /* truncated, bad IHL */        \
	X(FRAGMENT, "fragment")                  /* passed unmarked */          \
	X(INGRESS_SHAPED, "ingress_to_shaper")   /* redirected to the ifb's tbf */

#define VXFED_STAT_ENUM(name, text) VXFED_STAT_##name,
enum vxfed_stat { VXFED_STAT_LIST(VXFED_STAT_ENUM) VXFED_STAT_MAX };
#undef VXFED_STAT_ENUM

/* Rate state: array map "rate_state", one entry, shared by both programs of a pod (each
 * direction has its own fields). Updated with a spin lock so that two CPUs cannot spend the
 * same tokens. */
struct vxfed_rate_state {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 egress_next_ns;   /* EDT: departure time of the last packet */
	__u64 egress_tokens;    /* egress policer: bytes * 1e9 */
	__u64 egress_last_ns;   /* egress policer: time of the last refill */
	__u64 ingress_tokens;   /* bytes * 1e9 */
	__u64 ingress_last_ns;  /* time of the last refill */
};

/* Attachment record: array map "meta", one entry; lets list/reconcile/detach find the
 * interface again after the loader has exited. */
#define VXFED_META_PATH_MAX 256
#define VXFED_META_IFNAME_MAX 16
#define VXFED_META_INSTALLED_FQ (1u << 0) /* the loader put the fq root qdisc there */
#define VXFED_META_EGRESS_POLICED (1u << 1) /* egress limited by drops (no fq) */
#define VXFED_META_INSTALLED_TBF (1u << 2) /* the loader put the tbf root qdisc there */
#define VXFED_META_INSTALLED_IFB (1u << 3) /* the loader created the pod's ifb (ingress shaper) */
struct vxfed_meta {
	__u32 abi_version;
	__u32 ifindex;
	__u32 flags;
	__u32 pad;
	__u64 netns_ino;        /* inode of the netns: detects a reused path */
	__u64 netns_dev;
	__u64 attached_unix_ms;
	char netns_path[VXFED_META_PATH_MAX];
	char ifname[VXFED_META_IFNAME_MAX];
};

#endif /* VXFED_BPF_ABI_H */
