// vxfed-reflector: a cluster's route reflector's FRR config from a YAML file whose `bgp:`
// section has `role: route-reflector` (docs/bgp.md, "Route reflection"). Renders frr.conf and
// applies it the way vxfedd applies a node's (bgp.frr: frr-reload by default), then exits: FRR
// itself is the reflector; run this again after editing the file.
//
//   vxfed-reflector --config /etc/vxfed/reflector.yaml           render, write, apply
//   vxfed-reflector --config FILE --check                        validate only (0 valid, 2 not)
//   vxfed-reflector --config FILE --print                        the rendered text on stdout
//
// Exit codes: 0 done; 1 applying failed; 2 the file is invalid (FILE: FIELD: REASON on stderr).
#include <iostream>

#include <CLI/CLI.hpp>

#include "common/cpu_baseline.h"
#include "bgp/config.hpp"
#include "bgp/frr_apply.hpp"
#include "bgp/frr_render.hpp"
#include "bgp/reflector_render.hpp"
#include "common/read_file.hpp"
#include "common/yaml/reader.hpp"

namespace {

vxfed::Result<vxfed::bgp::BgpConfig> load(const std::string& path) {
  auto text = vxfed::read_file(path);
  if (!text) return vxfed::make_error(path + ": cannot be read (" + text.error().reason + ")");
  auto doc = vxfed::yaml::parse(*text, path);
  if (!doc) return vxfed::make_error(doc.error());
  if (!doc->IsMap() || !(*doc)["bgp"]) return vxfed::make_error(path + ": bgp: is required (the reflector's section)");
  for (const auto& kv : *doc)
    if (kv.first.as<std::string>() != "bgp")
      return vxfed::make_error(path + ": " + kv.first.as<std::string>() + ": unknown key (the file has only bgp:)");
  auto cfg = vxfed::bgp::parse_config((*doc)["bgp"]);
  if (!cfg) return vxfed::make_error(path + ": " + cfg.error());
  if (!cfg->enabled || cfg->role != vxfed::bgp::Role::kRouteReflector)
    return vxfed::make_error(path + ": bgp.role: must be route-reflector for vxfed-reflector");
  return cfg;
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline(argv[0]);  // before anything that may use the baseline's instructions
  CLI::App app{"vxfed-reflector: renders and applies a vxfed cluster route reflector's FRR config"};
  std::string config;
  bool check = false, print = false;
  app.add_option("--config", config, "YAML file with a bgp: section, role: route-reflector")->required();
  app.add_flag("--check", check, "validate the file and exit (0 valid, 2 invalid)");
  app.add_flag("--print", print, "print the rendered frr.conf (passwords included) instead of applying it");
  CLI11_PARSE(app, argc, argv);

  auto cfg = load(config);
  if (!cfg) {
    std::cerr << cfg.error() << "\n";
    return 2;
  }
  if (check) {
    std::cout << config << ": valid: route reflector AS " << cfg->asn << ", nodes from "
              << cfg->nodes.listen_range.str() << ", " << cfg->peers.size() << " peer reflector(s)\n";
    return 0;
  }
  const std::string text = vxfed::bgp::render_reflector_config(*cfg);
  if (print) {
    std::cout << text;
    return 0;
  }
  auto applied = vxfed::bgp::apply_frr_config(cfg->frr, text);
  if (!applied) {
    std::cerr << "vxfed-reflector: " << applied.error() << "\n";
    return 1;
  }
  std::cout << "vxfed-reflector: " << cfg->frr.config_path << " applied (" << vxfed::bgp::to_string(cfg->frr.apply)
            << ", " << applied->seconds << " s)\n";
  return 0;
}
