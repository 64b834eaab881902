// Validation and parsing of the CNI `bandwidth` capability (pure: no I/O).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bpf/lib/vxfed_bpf.hpp"

namespace vxfed::bpf {
namespace {

Status validate_direction(const char* dir, uint64_t rate, uint64_t burst) {
  if (rate == 0 && burst == 0) return {};
  if (rate != 0 && burst == 0)
    return make_error(fmt::format("{}Rate is set to {} bit/s but {}Burst is 0: set both or neither", dir, rate, dir));
  if (rate == 0 && burst != 0)
    return make_error(fmt::format("{}Burst is set to {} bits but {}Rate is 0: set both or neither", dir, burst, dir));
  if (rate < kMinRateBits || rate > kMaxRateBits)
    return make_error(fmt::format("{}Rate {} bit/s is out of range: must be {}..{} bit/s", dir, rate,
                                  kMinRateBits, kMaxRateBits));
  if (burst < kMinBurstBits || burst > kMaxBurstBits)
    return make_error(fmt::format("{}Burst {} bits is out of range: must be {}..{} bits (one 1500-byte "
                                  "packet .. under 4 GiB)", dir, burst, kMinBurstBits, kMaxBurstBits));
  return {};
}

Result<uint64_t> read_bits(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return uint64_t{0};
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer())  // signed and not unsigned: negative
    return make_error(fmt::format("bandwidth.{} is {}: must not be negative", key, it->get<int64_t>()));
  if (it->is_number_float()) {
    double v = it->get<double>();
    if (v < 0) return make_error(fmt::format("bandwidth.{} is {}: must not be negative", key, v));
    if (v != std::floor(v) || v >= 1.8e19)
      return make_error(fmt::format("bandwidth.{} is {}: must be a whole number", key, v));
    return static_cast<uint64_t>(v);
  }
  return make_error(fmt::format("bandwidth.{} must be a number, got {}", key, it->dump()));
}

}  // namespace

Status validate_bandwidth(const BandwidthSpec& s) {
  if (auto st = validate_direction("ingress", s.ingress_rate, s.ingress_burst); !st) return st;
  return validate_direction("egress", s.egress_rate, s.egress_burst);
}

Result<BandwidthSpec> parse_bandwidth_json(const nlohmann::json& j) {
  if (j.is_null()) return BandwidthSpec{};
  if (!j.is_object()) return make_error("bandwidth must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "ingressRate" && key != "ingressBurst" && key != "egressRate" && key != "egressBurst")
      return make_error(fmt::format("bandwidth has unknown key \"{}\" (known: ingressRate, ingressBurst, "
                                    "egressRate, egressBurst)", key));
  }
  BandwidthSpec s;
  auto ir = read_bits(j, "ingressRate");
  if (!ir) return Error{ir.error()};
  auto ib = read_bits(j, "ingressBurst");
  if (!ib) return Error{ib.error()};
  auto er = read_bits(j, "egressRate");
  if (!er) return Error{er.error()};
  auto eb = read_bits(j, "egressBurst");
  if (!eb) return Error{eb.error()};
  s.ingress_rate = *ir;
  s.ingress_burst = *ib;
  s.egress_rate = *er;
  s.egress_burst = *eb;
  if (auto st = validate_bandwidth(s); !st) return Error{st.error()};
  return s;
}

BandwidthSpec with_defaults(const BandwidthSpec& pod, const BandwidthSpec& def) {
  BandwidthSpec out = pod;
  if (pod.ingress_rate == 0 && pod.ingress_burst == 0) {
    out.ingress_rate = def.ingress_rate;
    out.ingress_burst = def.ingress_burst;
  }
  if (pod.egress_rate == 0 && pod.egress_burst == 0) {
    out.egress_rate = def.egress_rate;
    out.egress_burst = def.egress_burst;
  }
  return out;
}

std::vector<std::string> cap_bursts(BandwidthSpec& spec) {
  std::vector<std::string> cuts;
  auto cap = [&](const char* dir, uint64_t rate, uint64_t& burst) {
    if (rate == 0 || burst <= rate) return;
    cuts.push_back(fmt::format("{}Burst {} bits is more than one second of {}Rate {} bit/s: using {} bits (the "
                               "first {} bits would otherwise pass unshaped)",
                               dir, burst, dir, rate, rate, burst));
    burst = rate;
  };
  cap("ingress", spec.ingress_rate, spec.ingress_burst);
  cap("egress", spec.egress_rate, spec.egress_burst);
  return cuts;
}

}  // namespace vxfed::bpf
