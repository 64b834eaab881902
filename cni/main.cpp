// vxfed: the CNI plugin binary. A thin shell: read CNI_* and stdin, run the command, print the
// result or error JSON on stdout. Logs go to stderr or the config's logFile, never stdout.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "common/cpu_baseline.h"
#include "cni/bandwidth_hook.hpp"
#include "cni/cni_result.hpp"
#include "cni/commands.hpp"
#include "cni/conf_check.hpp"
#include "cni/conf_check_node.hpp"
#include "cni/env.hpp"
#include "cni/netconf.hpp"
#include "cni/version.hpp"
#include "common/read_file.hpp"

namespace cni = vxfed::cni;

namespace {

int print_error(const cni::CniError& e, const std::string& version) {
  spdlog::error("{} ({}){}", e.msg, e.code, e.details.empty() ? "" : ": " + e.details);
  std::cout << cni::write_error(e, version).dump() << std::endl;
  return 1;
}

void setup_logging(const cni::NetConf* conf, const cni::CniEnv* env) {
  std::shared_ptr<spdlog::logger> logger;
  if (conf && !conf->log_file.empty()) {
    try {
      logger = spdlog::basic_logger_mt("vxfed", conf->log_file);
    } catch (const spdlog::spdlog_ex&) {
      logger = spdlog::stderr_logger_mt("vxfed");
    }
  } else {
    logger = spdlog::stderr_logger_mt("vxfed");
  }
  std::string pattern = "%Y-%m-%dT%H:%M:%S.%e vxfed[%P] %l";
  if (env) pattern += std::string(" ") + cni::command_name(env->command);
  logger->set_pattern(pattern + ": %v");
  logger->set_level(conf ? spdlog::level::from_str(conf->log_level) : spdlog::level::warn);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline(argv[0]);  // before anything that may use the baseline's instructions
  if (argc > 1) {
    // Runtimes never pass arguments; these are for people.
    CLI::App app{"vxfed CNI plugin (CNI 0.3.0-1.1.0). Run by a container runtime with CNI_* "
                 "environment variables and the network configuration on stdin; see docs/cni.md."};
    bool version = false;
    std::string check;
    app.add_flag("--version", version, "print the supported CNI versions");
    app.add_option("--check", check,
                   "dry run: read FILE (- for stdin), a conflist or a vxfed network configuration, as a runtime "
                   "would pass it, and check host-local's ranges against this node's block when vxfedd answers "
                   "(at the config's socket); print a summary and exit 0, or the problem and exit 2. Warnings "
                   "(not checked; cniVersion 1.1.0 with older runtimes) go to stderr");
    CLI11_PARSE(app, argc, argv);
    if (!check.empty()) {
      std::string text;
      if (check == "-") {
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      } else {
        auto bytes = vxfed::read_file(check);
        if (!bytes) {
          std::cerr << "vxfed --check: " << bytes.error().message() << "\n";
          return 2;
        }
        text = std::move(bytes).value();
      }
      auto refuse = [&](const cni::CniError& e) {
        std::cerr << "vxfed --check: " << check << ": " << e.msg << (e.details.empty() ? "" : " (" + e.details + ")")
                  << "\n";
        return 2;
      };
      auto file = cni::check_network_file(text);
      if (!file) return refuse(file.error());
      // Then what only this node's vxfedd knows. Warnings go to stderr with the refusals, so an
      // install step that discards stdout (deploy/install-cni.sh) still shows them.
      std::vector<std::string> notes;
      for (const auto& [where, conf] : file->vxfed) {
        auto node = cni::check_against_node(conf, where);
        if (!node) return refuse(node.error());
        if (node->checked)
          notes.push_back(node->line);
        else
          file->warnings.push_back(node->line);
      }
      for (const auto& w : file->warnings) std::cerr << "vxfed --check: warning: " << w << "\n";
      std::cout << "vxfed --check: valid: " << file->summary << "\n";
      for (const auto& n : notes) std::cout << "vxfed --check: " << n << "\n";
      return 0;
    }
    if (version) {
      auto info = cni::write_version_info(cni::kLatestVersion);
      info["bandwidthEnforcement"] = "ebpf";
      std::cout << info.dump() << std::endl;
    }
    return 0;
  }

  setup_logging(nullptr, nullptr);
  auto env = cni::parse_env([](const std::string& key) -> std::optional<std::string> {
    const char* v = std::getenv(key.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  });
  std::string input;
  const bool needs_stdin = !env || env->command != cni::Command::kVersion || !isatty(0);
  if (needs_stdin) input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  if (!std::cin.eof() && std::cin.bad())
    return print_error(cni::cni_error(cni::kIoFailure, "cannot read the network configuration from stdin"),
                       cni::kLatestVersion);
  const std::string peeked = cni::peek_version(input).value_or("");
  const std::string reply_version = cni::is_supported(peeked) ? peeked : cni::kLatestVersion;
  if (!env) return print_error(env.error(), reply_version);

  if (env->command == cni::Command::kVersion) {
    std::cout << cni::write_version_info(reply_version).dump() << std::endl;
    return 0;
  }

  auto conf = cni::parse_netconf(input);
  if (!conf) return print_error(conf.error(), reply_version);
  spdlog::drop("vxfed");
  setup_logging(&*conf, &*env);

  cni::Expected<nlohmann::json> out = nlohmann::json();
  switch (env->command) {
    case cni::Command::kAdd: out = cni::cmd_add(*conf, *env); break;
    case cni::Command::kDel: out = cni::cmd_del(*conf, *env); break;
    case cni::Command::kCheck: out = cni::cmd_check(*conf, *env); break;
    case cni::Command::kGc: out = cni::cmd_gc(*conf, *env); break;
    case cni::Command::kStatus: out = cni::cmd_status(*conf, *env); break;
    case cni::Command::kVersion: break;
  }
  if (!out) return print_error(out.error(), conf->cni_version);
  if (!out->is_null()) std::cout << out->dump() << std::endl;
  return 0;
}
