// vxfed::bpf — the public API of vxfed's eBPF part (per-pod rate limits and traffic-class
// marking on the pod's interface). Callers: the CNI plugin (ADD/DEL/CHECK with the
// `bandwidth` capability) and vxfedd (reconcile at start-up).
//
// Everything returns vxfed::Result / vxfed::Status; nothing throws.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.hpp"

namespace vxfed::bpf {

// ---------- bandwidth: the CNI `bandwidth` capability, in the reference plugin's units -------

// Rates in bits per second, bursts in bits. 0/0 for a direction means "no limit".
struct BandwidthSpec {
  uint64_t ingress_rate = 0;   // bit/s, traffic into the pod
  uint64_t ingress_burst = 0;  // bits
  uint64_t egress_rate = 0;    // bit/s, traffic out of the pod
  uint64_t egress_burst = 0;   // bits

  bool has_ingress() const { return ingress_rate != 0; }
  bool has_egress() const { return egress_rate != 0; }
  bool operator==(const BandwidthSpec&) const = default;
};

// Limits the loader accepts (the reference plugin's checks plus what the programs need).
inline constexpr uint64_t kMinRateBits = 8'000;                  // 1 kB/s
inline constexpr uint64_t kMaxRateBits = 1'000'000'000'000ULL;   // 1 Tbit/s
inline constexpr uint64_t kMinBurstBits = 1'500 * 8;             // one full-size packet
inline constexpr uint64_t kMaxBurstBits = (4ULL << 30) * 8 - 8;  // < 4 GiB, as the reference plugin

// Refuses: a rate without a burst or a burst without a rate, values outside the limits above.
// The message names the field and the allowed range. The CNI plugin maps a failure to code 7.
Status validate_bandwidth(const BandwidthSpec& spec);

// Parses the runtimeConfig.bandwidth object ({"ingressRate": .., "ingressBurst": ..,
// "egressRate": .., "egressBurst": ..}); missing keys are 0. Refuses negative, fractional,
// non-numeric values and unknown keys, then validates.
Result<BandwidthSpec> parse_bandwidth_json(const nlohmann::json& j);

// Per direction: the pod's values when it set that direction, otherwise the network's.
BandwidthSpec with_defaults(const BandwidthSpec& pod, const BandwidthSpec& network_default);

// Cuts a burst above one second of its direction's rate to one second's worth (burst = rate
// bits): containerd's default burst (2^32-1 bits) would otherwise let the first 512 MB pass
// unshaped. Returns one sentence per cut naming the field, the value asked for and the value
// used (the CNI plugin logs them as warnings). attach_pod and check_pod apply it themselves.
std::vector<std::string> cap_bursts(BandwidthSpec& spec);

// ---------- traffic-class marking -------------------------------------------------------------

// One rule: protocol/ports -> DSCP and/or priority (skb->priority and 802.1p PCP where the
// VLAN tag is carried out of band). First match wins; at most 16 rules per pod.
struct MarkRule {
  std::string name;                  // class name for counters, [a-z0-9_-]{1,15}
  uint8_t protocol = 0;              // 6 (tcp), 17 (udp), 0 = any
  uint16_t dport_lo = 0, dport_hi = 0;  // 0/0: any destination port
  uint16_t sport_lo = 0, sport_hi = 0;  // 0/0: any source port
  std::optional<uint8_t> dscp;       // 0..63
  std::optional<uint8_t> priority;   // 0..7
  bool operator==(const MarkRule&) const = default;
};

inline constexpr uint16_t kRoceV2Port = 4791;
inline constexpr uint8_t kRoceDscp = 26;      // common RoCEv2 lossless-class default (AF31)
inline constexpr uint8_t kRocePriority = 3;   // common PFC priority for RoCE

// The default: {"roce", udp, dport 4791, dscp 26, priority 3}.
std::vector<MarkRule> default_mark_rules();

Status validate_rules(const std::vector<MarkRule>& rules);

// Parses a JSON array of rules:
//   [{"name": "roce", "protocol": "udp", "dport": 4791, "dscp": 26, "priority": 3},
//    {"name": "bulk", "protocol": "tcp", "dport": [5000, 5100], "dscp": 10}]
// "dport"/"sport" are a number or [lo, hi]; "protocol" is "tcp", "udp", "any" or a number.
Result<std::vector<MarkRule>> parse_rules_json(const nlohmann::json& j);

// ---------- pod keys ----------------------------------------------------------------------------

// A pod key names the pin directory: 1..200 characters of [A-Za-z0-9_=-] (bpffs refuses '.').
Status validate_pod_key(const std::string& key);
// The key the CNI plugin and vxfedd both use for an attachment: "<containerID>_<ifname>",
// other characters (and "_", "=") escaped as "=HH", so "net1.100" becomes "net1=2E100".
std::string pod_key_for(const std::string& container_id, const std::string& ifname);

// ---------- lifecycle -------------------------------------------------------------------------

// How each direction is limited (docs/bpf.md, "Rate limits"). automatic = shape: a tbf qdisc
// holds packets (egress: the pod interface's root; ingress: the root of an ifb the ingress
// program redirects to), so TCP meets a queue rather than lost windows. edt: the program sets
// skb->tstamp and an fq root qdisc releases packets then (kernels with CONFIG_NET_SCH_FQ;
// this CI kernel has none). police: a token bucket that drops (TCP needs a burst of about
// rate x 250 ms through it).
enum class EgressMode { automatic, shape, edt, police };
enum class IngressMode { automatic, shape, police };

// $VXFED_BPF_PIN_ROOT when set (tests running binaries side by side, e.g. the CNI plugin,
// keep their pins apart with it), else /sys/fs/bpf/vxfed.
std::string default_pin_root();

struct Options {
  std::string pin_root = default_pin_root();  // pods live in <pin_root>/pods/<key>/
  EgressMode egress_mode = EgressMode::automatic;    // automatic: shape
  IngressMode ingress_mode = IngressMode::automatic;  // automatic: shape
};

struct PodAttachment {
  std::string pod_key;
  std::string netns_path;      // e.g. /var/run/netns/x or /proc/<pid>/ns/net
  std::string ifname;          // the pod-side interface inside netns_path
  BandwidthSpec bandwidth;     // 0/0 per direction: no limit
  std::vector<MarkRule> rules; // empty: no marking
};

// Loads the programs for the pod (or reuses its pins), writes its limits and rules, pins
// programs and maps under <pin_root>/pods/<key>/, and attaches inside the netns:
// TC egress (marking; the egress limit by the mode, installing a tbf or fq root qdisc) and
// TC ingress (the ingress limit: redirect to the pod's ifb and its tbf, or the policer). Mounts bpffs on /sys/fs/bpf if needed. Idempotent: calling it again
// with new values updates them in place. On failure nothing new is left behind.
Status attach_pod(const PodAttachment& pod, const Options& opt = {});

// Detaches the filters (and the qdiscs and ifb it installed) inside the recorded netns, then
// unpins. Tolerates a netns or interface that is already gone, and an unknown key (ok).
Status detach_pod(const std::string& pod_key, const Options& opt = {});

struct PinnedPod {
  std::string pod_key;
  std::string netns_path;
  std::string ifname;
  uint32_t ifindex = 0;
  bool netns_alive = false;   // the recorded netns still exists (same inode)
  bool attached = false;      // our filters are on the interface (checked inside the netns)
  BandwidthSpec bandwidth;
  std::vector<MarkRule> rules;
  bool egress_policed = false;  // egress limited by drops
  bool egress_shaped = false;   // egress limited by the interface's tbf
  bool ingress_shaped = false;  // ingress redirected to the pod's ifb and its tbf
  uint64_t attached_unix_ms = 0;
};

// Every pod pinned under <pin_root>/pods. Incomplete directories are reported with
// attached = false so that reconcile removes them.
Result<std::vector<PinnedPod>> list_pinned(const Options& opt = {});

// Verifies one pod: pins present, netns alive, filters attached, limits as given (CNI CHECK).
Status check_pod(const PodAttachment& pod, const Options& opt = {});

struct ClassCounter {
  std::string name;  // rule name, or "unmatched"
  uint64_t packets = 0;
  uint64_t bytes = 0;
};
struct PodCounters {
  std::vector<ClassCounter> classes;        // one per rule slot in use, then "unmatched"
  std::map<std::string, uint64_t> stats;    // egress_passed, ingress_dropped_rate, ...
};
Result<PodCounters> read_counters(const std::string& pod_key, const Options& opt = {});
// Whether the pod has a pin directory (programs attached for it): vxfedd reads counters only then.
bool has_pins(const std::string& pod_key, const Options& opt = {});

struct ReconcileReport {
  std::vector<std::string> kept;
  std::vector<std::string> removed;   // pinned but not wanted, or whose netns is gone
  std::vector<std::string> missing;   // wanted but not pinned: the caller re-attaches them
  std::vector<std::string> errors;    // per-pod failures; the rest still ran
};
// For vxfedd start-up: keeps wanted pods whose netns is still alive, detaches+unpins the
// rest, and reports wanted keys that have no pins.
Result<ReconcileReport> reconcile(const std::set<std::string>& wanted, const Options& opt = {});

}  // namespace vxfed::bpf
