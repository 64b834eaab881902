// The lifecycle of a pod's programs: load (or reuse pins), configure, pin, attach inside the
// pod's netns; and list, check, read counters, reconcile, detach. See docs/bpf.md.
#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <net/if.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "common/netns.hpp"
#include "bpf/lib/pins.hpp"
#include "bpf/lib/shaper.hpp"
#include "bpf/lib/tc_attach.hpp"
#include "bpf/lib/vxfed_bpf.hpp"
#include "bpf/include/vxfed_bpf_abi.h"
#include "bpf/vxfed_tc.skel.h"

namespace vxfed::bpf {
namespace {

using detail::Hook;

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

struct SkelDeleter {
  void operator()(vxfed_tc* s) const { vxfed_tc__destroy(s); }
};

// How the limits are enforced, as attach_pod settled it.
struct Enforcement {
  bool egress_police = false;  // token-bucket drops in the program
  bool egress_qdisc = false;   // the interface's root tbf; the program passes
  uint32_t ingress_ifb = 0;    // nonzero: the program redirects ingress to this ifb
};

vxfed_config encode_config(const BandwidthSpec& bw, bool mark, const Enforcement& how) {
  vxfed_config c{};
  c.abi_version = VXFED_BPF_ABI_VERSION;
  c.egress_rate_bps = bw.egress_rate / 8;
  c.egress_burst_bytes = bw.egress_burst / 8;
  c.ingress_rate_bps = bw.ingress_rate / 8;
  c.ingress_burst_bytes = bw.ingress_burst / 8;
  if (bw.has_egress()) c.flags |= VXFED_CFG_EGRESS_LIMIT;
  if (bw.has_egress() && how.egress_police) c.flags |= VXFED_CFG_EGRESS_POLICE;
  if (bw.has_egress() && how.egress_qdisc) c.flags |= VXFED_CFG_EGRESS_QDISC;
  if (bw.has_ingress()) c.flags |= VXFED_CFG_INGRESS_LIMIT;
  if (bw.has_ingress() && how.ingress_ifb) {
    c.flags |= VXFED_CFG_INGRESS_SHAPE;
    c.ingress_ifindex = how.ingress_ifb;
  }
  if (mark) c.flags |= VXFED_CFG_MARK;
  return c;
}

BandwidthSpec decode_config(const vxfed_config& c) {
  BandwidthSpec bw;
  if (c.flags & VXFED_CFG_EGRESS_LIMIT) {
    bw.egress_rate = c.egress_rate_bps * 8;
    bw.egress_burst = c.egress_burst_bytes * 8;
  }
  if (c.flags & VXFED_CFG_INGRESS_LIMIT) {
    bw.ingress_rate = c.ingress_rate_bps * 8;
    bw.ingress_burst = c.ingress_burst_bytes * 8;
  }
  return bw;
}

vxfed_rule encode_rule(const MarkRule& r) {
  vxfed_rule e{};
  e.in_use = 1;
  e.protocol = r.protocol;
  e.dport_lo = r.dport_lo;
  e.dport_hi = r.dport_hi;
  e.sport_lo = r.sport_lo;
  e.sport_hi = r.sport_hi;
  if (r.dscp) {
    e.flags |= VXFED_RULE_SET_DSCP;
    e.dscp = *r.dscp;
  }
  if (r.priority) {
    e.flags |= VXFED_RULE_SET_PRIORITY;
    e.priority = *r.priority;
  }
  std::strncpy(e.name, r.name.c_str(), sizeof(e.name) - 1);
  return e;
}

MarkRule decode_rule(const vxfed_rule& e) {
  MarkRule r;
  r.name = std::string(e.name, strnlen(e.name, sizeof(e.name)));
  r.protocol = e.protocol;
  r.dport_lo = e.dport_lo;
  r.dport_hi = e.dport_hi;
  r.sport_lo = e.sport_lo;
  r.sport_hi = e.sport_hi;
  if (e.flags & VXFED_RULE_SET_DSCP) r.dscp = e.dscp;
  if (e.flags & VXFED_RULE_SET_PRIORITY) r.priority = e.priority;
  return r;
}

template <typename T>
Result<T> read_pinned_entry(const std::string& path, uint32_t key = 0) {
  Fd fd(bpf_obj_get(path.c_str()));
  if (fd.fd < 0) return make_error(fmt::format("cannot open pinned map {}: {}", path, strerror(errno)));
  T value{};
  if (bpf_map_lookup_elem(fd.fd, &key, &value) != 0)
    return make_error(fmt::format("cannot read {}[{}]: {}", path, key, strerror(errno)));
  return value;
}

// Sums a per-CPU array entry of T (T is a struct of u64 counters) over all possible CPUs.
template <typename T>
Result<std::vector<T>> read_percpu_sums(const std::string& path, uint32_t entries) {
  Fd fd(bpf_obj_get(path.c_str()));
  if (fd.fd < 0) return make_error(fmt::format("cannot open pinned map {}: {}", path, strerror(errno)));
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return make_error("cannot count the possible CPUs");
  std::vector<T> per_cpu(static_cast<size_t>(ncpu));
  static_assert(sizeof(T) % 8 == 0, "per-CPU values are laid out in 8-byte steps");
  std::vector<T> sums(entries);
  for (uint32_t k = 0; k < entries; k++) {
    if (bpf_map_lookup_elem(fd.fd, &k, per_cpu.data()) != 0)
      return make_error(fmt::format("cannot read {}[{}]: {}", path, k, strerror(errno)));
    for (const T& v : per_cpu) {
      const auto* src = reinterpret_cast<const uint64_t*>(&v);
      auto* dst = reinterpret_cast<uint64_t*>(&sums[k]);
      for (size_t w = 0; w < sizeof(T) / 8; w++) dst[w] += src[w];
    }
  }
  return sums;
}

Result<uint32_t> pinned_prog_id(const std::string& path) {
  Fd fd(bpf_obj_get(path.c_str()));
  if (fd.fd < 0) return make_error(fmt::format("cannot open pinned program {}: {}", path, strerror(errno)));
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd.fd, &info, &len) != 0)
    return make_error(fmt::format("cannot read program info of {}: {}", path, strerror(errno)));
  return info.id;
}

bool netns_matches(const vxfed_meta& m) {
  auto id = netns_identity(m.netns_path);
  return id && id->ino == m.netns_ino && id->dev == m.netns_dev;
}

// True when both hooks of the recorded interface run the pinned programs. Call only when the
// netns is alive.
Result<bool> filters_attached(const std::string& dir, const vxfed_meta& m) {
  auto eg = pinned_prog_id(dir + "/vxfed_egress");
  auto in = pinned_prog_id(dir + "/vxfed_ingress");
  if (!eg || !in) return false;
  bool attached = false;
  Status st = run_in_netns(m.netns_path, [&]() -> Status {
    int idx = static_cast<int>(if_nametoindex(m.ifname));
    if (idx == 0 || static_cast<uint32_t>(idx) != m.ifindex) return {};
    auto a = detail::tc_attached_prog_id(idx, Hook::egress);
    if (!a) return Error{a.error()};
    auto b = detail::tc_attached_prog_id(idx, Hook::ingress);
    if (!b) return Error{b.error()};
    attached = *a == *eg && *b == *in;
    return {};
  });
  if (!st) return Error{st.error()};
  return attached;
}

// libbpf prints the kernel's refusal of a second clsact create; that is expected (we create
// the hook when it may already exist). Everything else goes to stderr as usual.
int libbpf_print(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  if (std::strstr(format, "Kernel error message") != nullptr) return 0;
  return vfprintf(stderr, format, args);
}

void quiet_libbpf() {
  static const bool once = [] {
    libbpf_set_print(libbpf_print);
    return true;
  }();
  (void)once;
}

uint64_t unix_ms_now() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

Status validate_attachment(const PodAttachment& pod) {
  if (auto st = validate_pod_key(pod.pod_key); !st) return st;
  if (pod.ifname.empty() || pod.ifname.size() >= IFNAMSIZ || pod.ifname.find('/') != std::string::npos)
    return make_error(fmt::format("interface name \"{}\" is not valid (1..15 characters, no '/')", pod.ifname));
  if (pod.netns_path.empty() || pod.netns_path.size() >= VXFED_META_PATH_MAX)
    return make_error(fmt::format("netns path \"{}\" must be 1..{} characters", pod.netns_path,
                                  VXFED_META_PATH_MAX - 1));
  if (auto st = validate_bandwidth(pod.bandwidth); !st) return st;
  return validate_rules(pod.rules);
}

}  // namespace

Status detach_pod(const std::string& pod_key, const Options& opt) {
  if (auto st = validate_pod_key(pod_key); !st) return st;
  const std::string dir = detail::pod_dir(opt.pin_root, pod_key);
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return {};
  auto meta = read_pinned_entry<vxfed_meta>(dir + "/meta");
  if (meta && meta->ifindex != 0 && netns_matches(*meta)) {
    auto eg = pinned_prog_id(dir + "/vxfed_egress");
    auto in = pinned_prog_id(dir + "/vxfed_ingress");
    const vxfed_meta m = *meta;
    Status st = run_in_netns(m.netns_path, [&]() -> Status {
      int idx = static_cast<int>(if_nametoindex(m.ifname));
      if (idx == 0 || static_cast<uint32_t>(idx) != m.ifindex) return {};  // interface gone
      // Remove only filters that still run our programs: never someone else's.
      for (auto [hook, ours] : {std::pair{Hook::egress, &eg}, std::pair{Hook::ingress, &in}}) {
        auto id = detail::tc_attached_prog_id(idx, hook);
        if (!id) return Error{id.error()};
        if (*id != 0 && *ours && *id == **ours)
          if (auto d = detail::tc_detach(idx, hook); !d) return d;
      }
      if (m.flags & (VXFED_META_INSTALLED_FQ | VXFED_META_INSTALLED_TBF)) {
        auto kind = detail::root_qdisc_kind(idx);
        if (kind && ((*kind == "fq" && (m.flags & VXFED_META_INSTALLED_FQ)) ||
                     (*kind == "tbf" && (m.flags & VXFED_META_INSTALLED_TBF))))
          if (auto d = detail::delete_root_qdisc(idx); !d) return d;
      }
      if (m.flags & VXFED_META_INSTALLED_IFB)
        if (auto d = detail::delete_link(detail::ifb_name_for(idx)); !d) return d;
      return {};
    });
    if (!st) return make_error(fmt::format("detaching pod {}: {}", pod_key, st.error()));
  }
  return detail::remove_pod_dir(dir);
}

Status attach_pod(const PodAttachment& requested, const Options& opt) {
  quiet_libbpf();
  if (auto st = validate_attachment(requested); !st) return st;
  PodAttachment pod = requested;
  (void)cap_bursts(pod.bandwidth);  // the CNI plugin logs the cuts; every loader enforces them
  auto nsid = netns_identity(pod.netns_path);
  if (!nsid) return Error{nsid.error()};
  if (auto st = detail::ensure_pin_root(opt.pin_root); !st) return st;
  const std::string dir = detail::pod_dir(opt.pin_root, pod.pod_key);
  namespace fs = std::filesystem;
  std::error_code ec;

  // Pins of another ABI version, or of another interface, are replaced, not reused.
  std::optional<vxfed_meta> old_meta;
  if (fs::exists(dir, ec)) {
    auto m = read_pinned_entry<vxfed_meta>(dir + "/meta");
    if (m && m->abi_version == VXFED_BPF_ABI_VERSION && pod.netns_path == m->netns_path &&
        pod.ifname == m->ifname && netns_matches(*m)) {
      old_meta = *m;
    } else if (auto st = detach_pod(pod.pod_key, opt); !st) {
      return st;
    }
  }
  // Settle how each direction is limited, and put the qdiscs in place, before anything is
  // written: a tbf that queues (default), EDT under fq, or the policer.
  int ifindex = 0;
  Enforcement how;
  bool installed_fq_now = false;
  bool installed_tbf_now = false;
  bool created_ifb_now = false;
  const bool shape_egress = pod.bandwidth.has_egress() &&
                            (opt.egress_mode == EgressMode::automatic || opt.egress_mode == EgressMode::shape);
  const bool shape_ingress = pod.bandwidth.has_ingress() && opt.ingress_mode != IngressMode::police;
  Status found = run_in_netns(pod.netns_path, [&]() -> Status {
    ifindex = static_cast<int>(if_nametoindex(pod.ifname.c_str()));
    if (ifindex == 0)
      return make_error(fmt::format("there is no interface {} in network namespace {}", pod.ifname, pod.netns_path));
    auto mtu = detail::link_mtu(ifindex);
    if (!mtu) return Error{mtu.error()};
    if (shape_ingress) {
      const std::string ifb = detail::ifb_name_for(ifindex);
      created_ifb_now = if_nametoindex(ifb.c_str()) == 0;
      auto idx = detail::ensure_ifb(ifb, *mtu);
      if (!idx) return Error{idx.error()};
      how.ingress_ifb = static_cast<uint32_t>(*idx);
      auto st = detail::install_root_tbf(*idx, detail::tbf_params(pod.bandwidth.ingress_rate,
                                                                   pod.bandwidth.ingress_burst, *mtu));
      if (!st) return st;
    }
    if (!pod.bandwidth.has_egress()) return {};
    if (opt.egress_mode == EgressMode::police) {
      how.egress_police = true;
      return {};
    }
    if (shape_egress) {
      auto st = detail::install_root_tbf(ifindex, detail::tbf_params(pod.bandwidth.egress_rate,
                                                                      pod.bandwidth.egress_burst, *mtu));
      if (!st) return st;
      how.egress_qdisc = true;
      installed_tbf_now = true;
      return {};
    }
    auto kind = detail::root_qdisc_kind(ifindex);
    if (!kind) return Error{kind.error()};
    if (*kind == "fq") return {};
    bool unsupported = false;
    Status st = detail::install_root_fq(ifindex, &unsupported);
    if (st) installed_fq_now = true;
    return st;
  });
  if (!found) {
    if (created_ifb_now)
      (void)run_in_netns(pod.netns_path, [&]() { return detail::delete_link(detail::ifb_name_for(ifindex)); });
    return found;
  }
  if (old_meta && static_cast<int>(old_meta->ifindex) != ifindex) {
    // Same name, new interface (re-created veth): start over.
    if (auto st = detach_pod(pod.pod_key, opt); !st) return st;
    old_meta.reset();
  }
  const bool fresh = !old_meta.has_value();
  fs::create_directories(dir, ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", dir, ec.message()));

  // From here on a failure on a fresh attach removes everything it made.
  auto fail = [&](std::string message) -> Status {
    if (!old_meta.has_value()) {
      (void)run_in_netns(pod.netns_path, [&]() -> Status {
        (void)detail::tc_detach(ifindex, Hook::egress);
        (void)detail::tc_detach(ifindex, Hook::ingress);
        if (installed_fq_now || installed_tbf_now) (void)detail::delete_root_qdisc(ifindex);
        if (created_ifb_now) (void)detail::delete_link(detail::ifb_name_for(ifindex));
        return {};
      });
      (void)detail::remove_pod_dir(dir);
    }
    return make_error(fmt::format("attaching pod {}: {}", pod.pod_key, message));
  };

  std::unique_ptr<vxfed_tc, SkelDeleter> skel(vxfed_tc__open());
  if (!skel) return fail(fmt::format("cannot open the BPF object: {}", strerror(errno)));
  for (const auto& name : detail::pinned_map_names()) {
    bpf_map* map = bpf_object__find_map_by_name(skel->obj, name.c_str());
    if (!map) return fail(fmt::format("the BPF object has no map {}", name));
    if (int err = bpf_map__set_pin_path(map, (dir + "/" + name).c_str()); err)
      return fail(fmt::format("cannot set the pin path of {}: {}", name, strerror(-err)));
  }
  if (int err = vxfed_tc__load(skel.get()); err)
    return fail(fmt::format("loading the programs failed (verifier or pinned maps of another layout): {}",
                            strerror(-err)));

  // Configuration. The rate state restarts (full buckets) only when the limits change.
  const uint32_t zero = 0;
  int cfg_fd = bpf_map__fd(skel->maps.config);
  vxfed_config old_cfg{};
  (void)bpf_map_lookup_elem(cfg_fd, &zero, &old_cfg);
  vxfed_config cfg = encode_config(pod.bandwidth, !pod.rules.empty(), how);
  if (fresh || std::memcmp(&old_cfg, &cfg, sizeof(cfg)) != 0) {
    vxfed_rate_state st{};
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.rate_state), &zero, &st, BPF_ANY) != 0)
      return fail(fmt::format("cannot reset the rate state: {}", strerror(errno)));
  }
  for (uint32_t i = 0; i < VXFED_MAX_RULES; i++) {
    vxfed_rule e = i < pod.rules.size() ? encode_rule(pod.rules[i]) : vxfed_rule{};
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.rules), &i, &e, BPF_ANY) != 0)
      return fail(fmt::format("cannot write rule {}: {}", i, strerror(errno)));
  }
  if (bpf_map_update_elem(cfg_fd, &zero, &cfg, BPF_ANY) != 0)
    return fail(fmt::format("cannot write the configuration: {}", strerror(errno)));

  // Programs: pin the new instances (replacing the old pins), then swap them into tc.
  for (auto* prog : {skel->progs.vxfed_egress, skel->progs.vxfed_ingress}) {
    std::string path = dir + "/" + bpf_program__name(prog);
    ::unlink(path.c_str());
    if (int err = bpf_program__pin(prog, path.c_str()); err)
      return fail(fmt::format("cannot pin {}: {}", path, strerror(-err)));
  }

  uint32_t meta_flags = old_meta ? old_meta->flags : 0;
  // A root qdisc we install replaces whichever of ours was there.
  if (installed_fq_now) meta_flags = (meta_flags | VXFED_META_INSTALLED_FQ) & ~VXFED_META_INSTALLED_TBF;
  if (installed_tbf_now) meta_flags = (meta_flags | VXFED_META_INSTALLED_TBF) & ~VXFED_META_INSTALLED_FQ;
  if (how.ingress_ifb) meta_flags |= VXFED_META_INSTALLED_IFB;
  if (how.egress_police) meta_flags |= VXFED_META_EGRESS_POLICED;
  else meta_flags &= ~VXFED_META_EGRESS_POLICED;
  Status attached = run_in_netns(pod.netns_path, [&]() -> Status {
    if (auto st = detail::tc_attach(ifindex, Hook::egress, bpf_program__fd(skel->progs.vxfed_egress)); !st) return st;
    if (auto st = detail::tc_attach(ifindex, Hook::ingress, bpf_program__fd(skel->progs.vxfed_ingress)); !st)
      return st;
    // A root qdisc we installed earlier and no longer need (egress limit removed, or
    // policing now), and an ifb no longer needed (ingress limit removed, or policing now).
    const bool root_ours_needed = pod.bandwidth.has_egress() && !how.egress_police;
    if ((meta_flags & (VXFED_META_INSTALLED_FQ | VXFED_META_INSTALLED_TBF)) && !root_ours_needed) {
      auto kind = detail::root_qdisc_kind(ifindex);
      if (!kind) return Error{kind.error()};
      if (*kind == "fq" || *kind == "tbf")
        if (auto st = detail::delete_root_qdisc(ifindex); !st) return st;
      meta_flags &= ~(VXFED_META_INSTALLED_FQ | VXFED_META_INSTALLED_TBF);
    }
    if ((meta_flags & VXFED_META_INSTALLED_IFB) && !how.ingress_ifb) {
      if (auto st = detail::delete_link(detail::ifb_name_for(ifindex)); !st) return st;
      meta_flags &= ~VXFED_META_INSTALLED_IFB;
    }
    return {};
  });
  if (!attached) return fail(attached.error());

  vxfed_meta m{};
  m.abi_version = VXFED_BPF_ABI_VERSION;
  m.ifindex = static_cast<uint32_t>(ifindex);
  m.flags = meta_flags;
  m.netns_ino = nsid->ino;
  m.netns_dev = nsid->dev;
  m.attached_unix_ms = old_meta ? old_meta->attached_unix_ms : unix_ms_now();
  std::strncpy(m.netns_path, pod.netns_path.c_str(), sizeof(m.netns_path) - 1);
  std::strncpy(m.ifname, pod.ifname.c_str(), sizeof(m.ifname) - 1);
  if (bpf_map_update_elem(bpf_map__fd(skel->maps.meta), &zero, &m, BPF_ANY) != 0)
    return fail(fmt::format("cannot write the attachment record: {}", strerror(errno)));
  return {};
}

Result<std::vector<PinnedPod>> list_pinned(const Options& opt) {
  auto keys = detail::list_pod_dirs(opt.pin_root);
  if (!keys) return Error{keys.error()};
  std::vector<PinnedPod> out;
  for (const auto& key : *keys) {
    PinnedPod p;
    p.pod_key = key;
    const std::string dir = detail::pod_dir(opt.pin_root, key);
    auto meta = read_pinned_entry<vxfed_meta>(dir + "/meta");
    if (meta && meta->abi_version == VXFED_BPF_ABI_VERSION) {
      p.netns_path = meta->netns_path;
      p.ifname = meta->ifname;
      p.ifindex = meta->ifindex;
      p.attached_unix_ms = meta->attached_unix_ms;
      p.netns_alive = netns_matches(*meta);
      if (p.netns_alive) {
        auto a = filters_attached(dir, *meta);
        p.attached = a && *a;
      }
      if (auto cfg = read_pinned_entry<vxfed_config>(dir + "/config")) {
        p.bandwidth = decode_config(*cfg);
        p.egress_policed = (cfg->flags & VXFED_CFG_EGRESS_POLICE) != 0;
        p.egress_shaped = (cfg->flags & VXFED_CFG_EGRESS_QDISC) != 0;
        p.ingress_shaped = (cfg->flags & VXFED_CFG_INGRESS_SHAPE) != 0;
      }
      for (uint32_t i = 0; i < VXFED_MAX_RULES; i++) {
        auto r = read_pinned_entry<vxfed_rule>(dir + "/rules", i);
        if (r && r->in_use) p.rules.push_back(decode_rule(*r));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

Status check_pod(const PodAttachment& requested, const Options& opt) {
  if (auto st = validate_attachment(requested); !st) return st;
  PodAttachment pod = requested;
  (void)cap_bursts(pod.bandwidth);  // as attach_pod enforced it
  auto pods = list_pinned(opt);
  if (!pods) return Error{pods.error()};
  auto it = std::find_if(pods->begin(), pods->end(), [&](const PinnedPod& p) { return p.pod_key == pod.pod_key; });
  if (it == pods->end()) return make_error(fmt::format("pod {} has no pinned programs", pod.pod_key));
  if (it->netns_path != pod.netns_path || it->ifname != pod.ifname)
    return make_error(fmt::format("pod {} is pinned for {} in {}, not {} in {}", pod.pod_key, it->ifname,
                                  it->netns_path, pod.ifname, pod.netns_path));
  if (!it->netns_alive) return make_error(fmt::format("the network namespace of pod {} is gone", pod.pod_key));
  if (!it->attached) return make_error(fmt::format("the programs of pod {} are not attached to {}", pod.pod_key, pod.ifname));
  // The maps hold bytes: compare at that resolution, as the programs enforce it.
  if (!(decode_config(encode_config(pod.bandwidth, false, Enforcement{})) == it->bandwidth))
    return make_error(fmt::format("pod {} has other bandwidth limits than requested", pod.pod_key));
  if (!(it->rules == pod.rules)) return make_error(fmt::format("pod {} has other marking rules than requested", pod.pod_key));
  return {};
}

bool has_pins(const std::string& pod_key, const Options& opt) {
  if (!validate_pod_key(pod_key)) return false;
  std::error_code ec;
  return std::filesystem::exists(detail::pod_dir(opt.pin_root, pod_key), ec);
}

Result<PodCounters> read_counters(const std::string& pod_key, const Options& opt) {
  if (auto st = validate_pod_key(pod_key); !st) return Error{st.error()};
  const std::string dir = detail::pod_dir(opt.pin_root, pod_key);
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return make_error(fmt::format("pod {} has no pinned programs", pod_key));
  auto classes = read_percpu_sums<vxfed_counter>(dir + "/class_counters", VXFED_CLASS_SLOTS);
  if (!classes) return Error{classes.error()};
  struct U64 {
    uint64_t v;
  };
  auto stats = read_percpu_sums<U64>(dir + "/stats", VXFED_STAT_MAX);
  if (!stats) return Error{stats.error()};
  PodCounters out;
  for (uint32_t i = 0; i < VXFED_MAX_RULES; i++) {
    auto r = read_pinned_entry<vxfed_rule>(dir + "/rules", i);
    if (!r) return Error{r.error()};
    if (!r->in_use) continue;
    out.classes.push_back({decode_rule(*r).name, (*classes)[i].packets, (*classes)[i].bytes});
  }
  out.classes.push_back({"unmatched", (*classes)[VXFED_CLASS_UNMATCHED].packets,
                         (*classes)[VXFED_CLASS_UNMATCHED].bytes});
#define VXFED_STAT_NAME(name, text) text,
  static const char* const names[] = {VXFED_STAT_LIST(VXFED_STAT_NAME)};
#undef VXFED_STAT_NAME
  for (uint32_t i = 0; i < VXFED_STAT_MAX; i++) out.stats[names[i]] = (*stats)[i].v;
  // The shaped limits (the default) drop in their tbf qdiscs, not in the programs: what the
  // pod's tbf (egress) and its ifb's tbf (ingress) dropped counts as the policer's drops did,
  // under the same outcomes, so an operator sees rate-limit drops whichever mode runs.
  auto meta = read_pinned_entry<vxfed_meta>(dir + "/meta");
  if (meta && meta->ifindex != 0 && (meta->flags & (VXFED_META_INSTALLED_TBF | VXFED_META_INSTALLED_IFB)) &&
      netns_matches(*meta)) {
    const vxfed_meta m = *meta;
    std::uint64_t egress = 0, ingress = 0;
    Status st = run_in_netns(m.netns_path, [&]() -> Status {
      const int idx = static_cast<int>(if_nametoindex(m.ifname));
      if (idx == 0 || static_cast<uint32_t>(idx) != m.ifindex) return {};  // interface gone
      if (m.flags & VXFED_META_INSTALLED_TBF)
        if (auto root = detail::root_qdisc(idx); root && root->kind == "tbf") egress = root->drops;
      if (m.flags & VXFED_META_INSTALLED_IFB) {
        const int ifb = static_cast<int>(if_nametoindex(detail::ifb_name_for(idx).c_str()));
        if (ifb != 0)
          if (auto root = detail::root_qdisc(ifb); root && root->kind == "tbf") ingress = root->drops;
      }
      return {};
    });
    if (!st) return make_error(fmt::format("pod {}: reading its shapers' drops: {}", pod_key, st.error()));
    out.stats["egress_dropped_rate"] += egress;
    out.stats["ingress_dropped_rate"] += ingress;
  }
  return out;
}

Result<ReconcileReport> reconcile(const std::set<std::string>& wanted, const Options& opt) {
  auto pods = list_pinned(opt);
  if (!pods) return Error{pods.error()};
  ReconcileReport rep;
  std::set<std::string> pinned;
  for (const auto& p : *pods) {
    pinned.insert(p.pod_key);
    if (wanted.count(p.pod_key) && p.netns_alive && p.attached) {
      rep.kept.push_back(p.pod_key);
      continue;
    }
    if (auto st = detach_pod(p.pod_key, opt); !st) {
      rep.errors.push_back(st.error());
      continue;
    }
    rep.removed.push_back(p.pod_key);
    if (wanted.count(p.pod_key) && p.netns_alive) rep.missing.push_back(p.pod_key);  // re-attach
  }
  for (const auto& w : wanted)
    if (!pinned.count(w)) rep.missing.push_back(w);
  return rep;
}

}  // namespace vxfed::bpf
