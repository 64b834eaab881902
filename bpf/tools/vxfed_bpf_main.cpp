// vxfed-bpf: a thin operator/test shell over vxfed::bpf (attach, detach, list, counters,
// validate, reconcile). Results are JSON on stdout; errors are one sentence on stderr, exit 1.
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/cpu_baseline.h"
#include "bpf/lib/vxfed_bpf.hpp"

namespace vb = vxfed::bpf;
using nlohmann::json;

namespace {

json bandwidth_json(const vb::BandwidthSpec& b) {
  return {{"ingressRate", b.ingress_rate}, {"ingressBurst", b.ingress_burst},
          {"egressRate", b.egress_rate},   {"egressBurst", b.egress_burst}};
}

json rule_json(const vb::MarkRule& r) {
  json j = {{"name", r.name}, {"protocol", r.protocol}};
  if (r.dport_lo || r.dport_hi) j["dport"] = {r.dport_lo, r.dport_hi};
  if (r.sport_lo || r.sport_hi) j["sport"] = {r.sport_lo, r.sport_hi};
  if (r.dscp) j["dscp"] = *r.dscp;
  if (r.priority) j["priority"] = *r.priority;
  return j;
}

int fail(const std::string& message) {
  std::cerr << "vxfed-bpf: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline(argv[0]);  // before anything that may use the baseline's instructions
  CLI::App app{"vxfed-bpf: per-pod rate limits and traffic-class marking (TC eBPF on the pod interface)"};
  app.require_subcommand(1);
  vb::Options opt;
  app.add_option("--pin-root", opt.pin_root, "bpffs directory for pins")->capture_default_str();
  std::map<std::string, vb::EgressMode> modes{{"auto", vb::EgressMode::automatic},
                                              {"shape", vb::EgressMode::shape},
                                              {"edt", vb::EgressMode::edt},
                                              {"police", vb::EgressMode::police}};
  app.add_option("--egress-mode", opt.egress_mode,
                 "egress limit: auto (= shape: the interface's tbf queues), shape, edt (needs fq), police (drops)")
      ->transform(CLI::CheckedTransformer(modes, CLI::ignore_case));
  std::map<std::string, vb::IngressMode> in_modes{
      {"auto", vb::IngressMode::automatic}, {"shape", vb::IngressMode::shape}, {"police", vb::IngressMode::police}};
  app.add_option("--ingress-mode", opt.ingress_mode,
                 "ingress limit: auto (= shape: redirect to the pod's ifb, whose tbf queues), shape, police (drops)")
      ->transform(CLI::CheckedTransformer(in_modes, CLI::ignore_case));

  vb::PodAttachment pod;
  std::string container_id, rules_json = "default", bandwidth_json_text;
  auto* attach = app.add_subcommand("attach", "load, configure, pin and attach a pod's programs (idempotent)");
  attach->add_option("--netns", pod.netns_path, "pod network namespace path")->required();
  attach->add_option("--ifname", pod.ifname, "pod-side interface inside the netns")->required();
  attach->add_option("--pod-key", pod.pod_key, "pin directory name (default: from --container-id and --ifname)");
  attach->add_option("--container-id", container_id, "derive the pod key as the CNI plugin does");
  attach->add_option("--bandwidth", bandwidth_json_text,
                     "CNI bandwidth JSON: {\"ingressRate\":bit/s,\"ingressBurst\":bits,\"egressRate\":..,\"egressBurst\":..}");
  attach->add_option("--ingress-rate", pod.bandwidth.ingress_rate, "bit/s");
  attach->add_option("--ingress-burst", pod.bandwidth.ingress_burst, "bits");
  attach->add_option("--egress-rate", pod.bandwidth.egress_rate, "bit/s");
  attach->add_option("--egress-burst", pod.bandwidth.egress_burst, "bits");
  attach->add_option("--rules", rules_json, "marking rules as a JSON array, 'default' (RoCEv2) or 'none'")
      ->capture_default_str();

  std::string key;
  auto* detach = app.add_subcommand("detach", "detach and unpin a pod (absent is fine)");
  detach->add_option("--pod-key", key, "pod key")->required();

  app.add_subcommand("list", "list pinned pods as JSON");

  auto* counters = app.add_subcommand("counters", "per-class counters and stats of a pod as JSON");
  counters->add_option("--pod-key", key, "pod key")->required();

  std::string validate_text;
  auto* validate = app.add_subcommand("validate", "validate a CNI bandwidth JSON object (exit 1 with a reason)");
  validate->add_option("bandwidth", validate_text, "JSON object")->required();

  std::vector<std::string> wanted;
  auto* reconcile = app.add_subcommand("reconcile", "keep wanted pods, remove all other pins");
  reconcile->add_option("--want", wanted, "pod keys to keep");

  CLI11_PARSE(app, argc, argv);

  if (*attach) {
    if (pod.pod_key.empty()) {
      if (container_id.empty()) return fail("give --pod-key or --container-id");
      pod.pod_key = vb::pod_key_for(container_id, pod.ifname);
    }
    if (!bandwidth_json_text.empty()) {
      json j = json::parse(bandwidth_json_text, nullptr, false);
      if (j.is_discarded()) return fail("--bandwidth is not valid JSON");
      auto bw = vb::parse_bandwidth_json(j);
      if (!bw) return fail(bw.error());
      pod.bandwidth = *bw;
    }
    if (rules_json == "default") {
      pod.rules = vb::default_mark_rules();
    } else if (rules_json != "none") {
      json j = json::parse(rules_json, nullptr, false);
      if (j.is_discarded()) return fail("--rules is not valid JSON");
      auto rules = vb::parse_rules_json(j);
      if (!rules) return fail(rules.error());
      pod.rules = *rules;
    }
    if (auto st = vb::attach_pod(pod, opt); !st) return fail(st.error());
    std::cout << json{{"attached", pod.pod_key}}.dump() << "\n";
  } else if (*detach) {
    if (auto st = vb::detach_pod(key, opt); !st) return fail(st.error());
    std::cout << json{{"detached", key}}.dump() << "\n";
  } else if (app.got_subcommand("list")) {
    auto pods = vb::list_pinned(opt);
    if (!pods) return fail(pods.error());
    json out = json::array();
    for (const auto& p : *pods) {
      json rules = json::array();
      for (const auto& r : p.rules) rules.push_back(rule_json(r));
      out.push_back({{"podKey", p.pod_key}, {"netns", p.netns_path}, {"ifname", p.ifname}, {"ifindex", p.ifindex},
                     {"netnsAlive", p.netns_alive}, {"attached", p.attached},
                     {"bandwidth", bandwidth_json(p.bandwidth)}, {"egressPoliced", p.egress_policed},
                     {"egressShaped", p.egress_shaped}, {"ingressShaped", p.ingress_shaped}, {"rules", rules},
                     {"attachedUnixMs", p.attached_unix_ms}});
    }
    std::cout << out.dump(2) << "\n";
  } else if (*counters) {
    auto c = vb::read_counters(key, opt);
    if (!c) return fail(c.error());
    json classes = json::array();
    for (const auto& cl : c->classes) classes.push_back({{"name", cl.name}, {"packets", cl.packets}, {"bytes", cl.bytes}});
    std::cout << json{{"classes", classes}, {"stats", c->stats}}.dump(2) << "\n";
  } else if (*validate) {
    json j = json::parse(validate_text, nullptr, false);
    if (j.is_discarded()) return fail("bandwidth is not valid JSON");
    auto bw = vb::parse_bandwidth_json(j);
    if (!bw) return fail(bw.error());
    std::cout << json{{"valid", true}, {"bandwidth", bandwidth_json(*bw)}}.dump() << "\n";
  } else if (*reconcile) {
    auto rep = vb::reconcile(std::set<std::string>(wanted.begin(), wanted.end()), opt);
    if (!rep) return fail(rep.error());
    std::cout << json{{"kept", rep->kept}, {"removed", rep->removed}, {"missing", rep->missing},
                      {"errors", rep->errors}}.dump(2)
              << "\n";
    if (!rep->errors.empty()) return 1;
  }
  return 0;
}
