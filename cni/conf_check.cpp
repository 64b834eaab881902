#include "cni/conf_check.hpp"

#include <nlohmann/json.hpp>

#include "cni/netconf.hpp"

namespace vxfed::cni {

namespace {

Expected<std::string> check_vxfed(const nlohmann::json& conf, const std::string& where, CheckedFile& out) {
  auto parsed = parse_netconf(conf.dump());
  if (!parsed) return cni_error(parsed.error().code, where + ": " + parsed.error().msg, parsed.error().details);
  std::string s = "vxfed network " + parsed->network;
  s += parsed->ipam_type.empty() ? ", no IPAM" : ", " + parsed->ipam_type + " IPAM";
  for (std::size_t i = 0; i < parsed->service_cidrs.size(); ++i)
    s += (i ? " " : ", service range ") + parsed->service_cidrs[i].str();
  if (parsed->cni_version == "1.1.0") out.warnings.push_back(cni_version_1_1_warning(where));
  out.vxfed.emplace_back(where, std::move(*parsed));
  return s;
}

}  // namespace

std::string cni_version_1_1_warning(const std::string& where) {
  // libcni before v1.2.0 knows results up to 1.0.0: it runs the plugins, which wire the pod,
  // then fails to read the 1.1.0 result they print ("unsupported CNI result version").
  return where + ": cniVersion 1.1.0 needs a runtime built on libcni 1.2 or later "
                 "(github.com/containernetworking/cni v1.2.0+). A runtime on an older libcni, such as Debian "
                 "12's podman 4.3 (its CNI backend), runs vxfed, which wires the pod, and then reports the ADD "
                 "as failed: 'unsupported CNI result version \"1.1.0\"'. For such a runtime set "
                 "\"cniVersion\": \"1.0.0\" (vxfed works the same there; only GC and STATUS need 1.1.0)";
}

Expected<CheckedFile> check_network_file(const std::string& text) {
  CheckedFile out;
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return cni_error(kDecodeFailure, "not a JSON object");
  if (!json.contains("plugins")) {
    if (json.value("type", "") != "vxfed")
      return cni_error(kInvalidConfig, "a single network configuration whose type is not vxfed");
    auto one = check_vxfed(json, "the configuration", out);
    if (!one) return one.error();
    out.summary = *one;
    return out;
  }
  const auto& plugins = json["plugins"];
  if (!plugins.is_array() || plugins.empty()) return cni_error(kInvalidConfig, "plugins: must be a non-empty array");
  if (!json.contains("name") || !json["name"].is_string() || json["name"].get<std::string>().empty())
    return cni_error(kInvalidConfig, "name: a conflist needs a name");
  if (!json.contains("cniVersion") || !json["cniVersion"].is_string())
    return cni_error(kInvalidConfig, "cniVersion: a conflist needs a cniVersion");
  std::string summary = "conflist " + json["name"].get<std::string>() + " (" + json["cniVersion"].get<std::string>() + "):";
  bool any_vxfed = false;
  for (std::size_t i = 0; i < plugins.size(); ++i) {
    const std::string where = "plugins[" + std::to_string(i) + "]";
    const auto& p = plugins[i];
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string() || p["type"].get<std::string>().empty())
      return cni_error(kInvalidConfig, where + ": a plugin needs a type");
    const std::string type = p["type"].get<std::string>();
    summary += (i ? "; " : " ");
    if (type == "bandwidth")
      return cni_error(kInvalidConfig,
                       where + ": the reference bandwidth plugin has no effect on vxfed pods: it shapes the host "
                               "veth with qdiscs, and vxfed-dataplane reads and writes that veth beneath them (its "
                               "limits hold in neither direction). Remove it and declare \"bandwidth\" in vxfed's "
                               "capabilities: vxfed enforces runtimeConfig.bandwidth itself (eBPF, docs/cni.md)");
    if (type != "vxfed") {
      summary += type;
      continue;
    }
    if (i != 0) return cni_error(kInvalidConfig, where + ": vxfed must be the first plugin of a conflist (it creates the interface)");
    nlohmann::json conf = p;
    conf["name"] = json["name"];
    conf["cniVersion"] = json["cniVersion"];
    auto one = check_vxfed(conf, where, out);
    if (!one) return one.error();
    summary += *one;
    any_vxfed = true;
  }
  if (!any_vxfed) return cni_error(kInvalidConfig, "no vxfed plugin in the conflist");
  out.summary = summary;
  return out;
}

}  // namespace vxfed::cni
