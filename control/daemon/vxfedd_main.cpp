// vxfedd: the node control daemon. Thin shell: arguments, logging, daemonizing; the work is
// in Daemon (daemon.hpp) and the libraries under control/ and vni/.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

#include "common/cpu_baseline.h"
#include "control/daemon/config_overrides.hpp"
#include "control/daemon/daemon.hpp"
#include "control/daemon/daemon_config.hpp"
#include "common/serving_lock.hpp"

namespace {

// Forks into the background; the parent exits with the status the child reports through the
// pipe once it is serving (0) or failed (non-zero), so `vxfedd` without --foreground still
// fails visibly on a bad config.
int daemonize(int& ready_fd) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid > 0) {
    ::close(fds[1]);
    char status = 1;
    if (::read(fds[0], &status, 1) != 1) status = 1;
    _exit(status);
  }
  ::close(fds[0]);
  ::setsid();
  if (::fork() > 0) _exit(0);
  (void)::chdir("/");
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    if (null > 2) ::close(null);
  }
  ready_fd = fds[1];
  return 0;
}

std::atomic<bool> g_stop_standing_by{false};

void on_stop_while_standing_by(int) { g_stop_standing_by.store(true); }

// One vxfedd serves a socket and its state dir at a time (common/serving_lock.hpp): a second
// one, a rolling update's new container started before the old one stops, waits here with
// its config read, and starts the moment the old one has exited. SIGTERM/SIGINT while waiting
// end it (the Daemon installs its own handlers afterwards).
vxfed::Result<vxfed::ServingLock> take_over(const std::string& socket, spdlog::logger& log) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_while_standing_by;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  auto lock = vxfed::ServingLock::acquire(
      socket, [] { return g_stop_standing_by.load(); },
      [&] { log.info("another vxfedd serves {}: standing by until it exits", socket); });
  sa.sa_handler = SIG_DFL;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  return lock;
}

void report_ready(int& fd, char status) {
  if (fd < 0) return;
  (void)::write(fd, &status, 1);
  ::close(fd);
  fd = -1;
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline(argv[0]);  // before anything that may use the baseline's instructions
  CLI::App app{"vxfedd: the vxfed node control daemon (networks, VNIs, endpoints, routes -> vxfed-dataplane)"};
  vxfed::control::DaemonOptions options;
  std::string check_config, socket, state_dir, log_level, node_name, vtep_ip, metrics_listen;
  bool foreground = false, check = false;
  app.add_option("-c,--config", options.config_path, "YAML config file (see docs/vxfedd.example.yaml)");
  app.add_option("--check-config", check_config, "validate FILE and exit: 0 valid, 2 invalid");
  app.add_option("--state-dir", state_dir, "persistent state (VNIs, networks, endpoints); default daemon.state_dir, /var/lib/vxfed");
  app.add_option("--socket", socket, "API socket; default daemon.socket, /run/vxfed/vxfedd.sock");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error; default daemon.log_level");
  app.add_option("--node-name", node_name, "this node's name; overrides node.name of the config (which may then be left out)");
  app.add_option("--vtep-ip", vtep_ip, "this node's VTEP address; overrides node.vtep_ip of the config (which may then be left out)");
  app.add_option("--metrics-listen", metrics_listen,
                 "IPV4:PORT of the metrics endpoint (a DaemonSet: $(NODE_IP):9472); default daemon.metrics_listen, "
                 "127.0.0.1:9472");
  app.add_flag("-f,--foreground", foreground, "stay in the foreground and log to stderr (default: daemonize, log to syslog)");
  app.add_flag("--check", check,
               "dry run: read the command line and the config as a start would, print what would run and exit: 0 "
               "valid, 2 not; touches nothing (no state dir, socket, dataplane, FRR or eBPF)");
  app.set_version_flag("--version", vxfed::control::kVersion);
  CLI11_PARSE(app, argc, argv);

  if (!check_config.empty()) {
    auto config = vxfed::control::load_config(check_config, vxfed::control::NodeOverrides{});
    if (!config) {
      std::cerr << "vxfedd: invalid config: " << config.error() << "\n";
      return 2;
    }
    std::cout << check_config << ": valid (" << config->networks.size() << " networks, " << config->pools.size()
              << " VNI pools)\n";
    return 0;
  }
  if (options.config_path.empty()) {
    std::cerr << "vxfedd: --config FILE is required (or --check-config FILE); see --help\n";
    return 2;
  }
  if (!socket.empty()) options.socket = socket;
  if (!state_dir.empty()) options.state_dir = state_dir;
  if (!metrics_listen.empty()) options.metrics_listen = metrics_listen;
  if (!log_level.empty()) {
    if (spdlog::level::from_str(log_level) == spdlog::level::off && log_level != "off") {
      std::cerr << "vxfedd: --log-level: '" << log_level << "' is not a level\n";
      return 2;
    }
    options.log_level = log_level;
  }

  if (!node_name.empty()) options.node_name = node_name;
  if (!vtep_ip.empty()) options.vtep_ip = vtep_ip;

  auto config = vxfed::control::load_config(options.config_path, {options.node_name, options.vtep_ip});
  if (!config) {
    std::cerr << "vxfedd: invalid config, not starting: " << config.error() << "\n";
    return 2;
  }
  vxfed::control::apply_overrides(*config, options);
  if (check) {
    std::cout << "vxfedd --check: valid: node " << config->node.name << " (VTEP " << config->node.vtep_ip
              << "), cluster " << config->cluster.name << ", " << config->networks.size() << " network(s), "
              << config->pools.size() << " VNI pool(s), state dir " << config->daemon.state_dir << ", socket "
              << config->daemon.socket << ", dataplane " << config->dataplane.socket
              << (config->bgp.enabled ? ", bgp enabled" : "") << "\n";
    return 0;
  }

  int ready_fd = -1;
  std::shared_ptr<spdlog::logger> log;
  if (foreground) {
    log = spdlog::stderr_color_mt("vxfedd");
  } else {
    if (daemonize(ready_fd) != 0) {
      std::perror("vxfedd: daemonize");
      return 1;
    }
    log = spdlog::syslog_logger_mt("vxfedd", "vxfedd", LOG_PID, LOG_DAEMON);
  }
  log->set_level(spdlog::level::from_str(config->daemon.log_level));
  log->flush_on(spdlog::level::info);

  // Declared before the daemon: released after it has closed its stores and socket.
  auto serving = take_over(config->daemon.socket, *log);
  if (!serving) {
    log->critical("not starting: {}", serving.error());
    report_ready(ready_fd, 1);
    return 1;
  }
  if (!serving->held()) {
    log->info("stopped while standing by: never served");
    report_ready(ready_fd, 1);
    return 0;
  }
  auto daemon = vxfed::control::Daemon::create(std::move(*config), options, log);
  if (!daemon) {
    log->critical("not starting: {}", daemon.error());
    report_ready(ready_fd, 1);
    return 1;
  }
  report_ready(ready_fd, 0);
  return (*daemon)->run();
}
