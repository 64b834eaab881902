// vxfedd assembled: config, node state, API server, dataplane client, metrics, route sources,
// signals (SIGTERM/SIGINT stop, SIGHUP reloads the config and keeps the old one if the new one
// is invalid). One io_context, one thread: every part runs on it, so nothing needs a lock.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "control/daemon/daemon_config.hpp"
#include "common/result.hpp"
#include "common/version.hpp"

namespace vxfed::control {

inline constexpr const char* kVersion = vxfed::kVersion;  // common/version.hpp, from meson.build

struct DaemonOptions {
  std::string config_path;
  std::optional<std::string> socket;      // overrides daemon.socket
  std::optional<std::string> state_dir;   // overrides daemon.state_dir
  std::optional<std::string> log_level;   // overrides daemon.log_level
  std::optional<std::string> node_name;   // overrides node.name (control/daemon/config_overrides.hpp)
  std::optional<std::string> vtep_ip;     // overrides node.vtep_ip
  std::optional<std::string> metrics_listen;  // overrides daemon.metrics_listen
};

// Applies command-line overrides to a loaded config.
void apply_overrides(Config& config, const DaemonOptions& options);

class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> create(Config config, DaemonOptions options,
                                                std::shared_ptr<spdlog::logger> log);
  ~Daemon();
  // Serves until SIGTERM/SIGINT; returns the process exit code.
  int run();

 private:
  struct Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vxfed::control
