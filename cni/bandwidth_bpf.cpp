// Limits enforced by bpf/'s per-pod programs (vxfed::bpf, bpf/lib/vxfed_bpf.hpp).
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cni/bandwidth_hook.hpp"
#include "bpf/lib/vxfed_bpf.hpp"

namespace vxfed::cni {

namespace vb = vxfed::bpf;

namespace {

bool requested(const NetConf& conf) {
  return conf.bandwidth && (conf.bandwidth->ingress_rate || conf.bandwidth->egress_rate);
}

vb::PodAttachment pod_for(const NetConf& conf, const std::string& container_id, const std::string& ifname,
                          const std::string& netns) {
  vb::BandwidthSpec spec{conf.bandwidth->ingress_rate, conf.bandwidth->ingress_burst,
                         conf.bandwidth->egress_rate, conf.bandwidth->egress_burst};
  return vb::PodAttachment{vb::pod_key_for(container_id, ifname), netns, ifname, spec, vb::default_mark_rules()};
}

}  // namespace

Done bandwidth_validate(const NetConf& conf) {
  if (!conf.bandwidth) return done();
  auto parsed = vb::parse_bandwidth_json(conf.raw["runtimeConfig"]["bandwidth"]);
  if (!parsed) return cni_error(kInvalidConfig, "runtimeConfig.bandwidth: " + parsed.error());
  return done();
}

Done bandwidth_attach(const NetConf& conf, const std::string& container_id, const std::string& ifname,
                      const std::string& netns) {
  if (!requested(conf)) return done();
  vb::PodAttachment pod = pod_for(conf, container_id, ifname, netns);
  // attach_pod cuts a burst above one second of its rate; say so, or containerd's default
  // burst (2^32-1 bits) would silently mean something else than the pod spec asked for.
  vb::BandwidthSpec capped = pod.bandwidth;
  for (const auto& cut : vb::cap_bursts(capped)) spdlog::warn("runtimeConfig.bandwidth.{}", cut);
  if (auto st = vb::attach_pod(pod); !st)
    return cni_error(kInterfaceFailure, "cannot attach the pod's bandwidth limits", st.error());
  return done();
}

Done bandwidth_detach(const std::string& container_id, const std::string& ifname) {
  if (auto st = vb::detach_pod(vb::pod_key_for(container_id, ifname)); !st)
    return cni_error(kInterfaceFailure, "cannot remove the pod's bandwidth limits", st.error());
  return done();
}

Done bandwidth_check(const NetConf& conf, const std::string& container_id, const std::string& ifname,
                     const std::string& netns) {
  if (!requested(conf)) return done();
  if (auto st = vb::check_pod(pod_for(conf, container_id, ifname, netns)); !st)
    return cni_error(kCheckFailed, "the pod's bandwidth limits are not as configured", st.error());
  return done();
}

}  // namespace vxfed::cni
