// vxfedd as the benchmarks' child process: its own temp dir, config written there, log in
// the dir, stopped with SIGTERM. The memory figures read its /proc status.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "common/delimited.hpp"

namespace vxfed::perf {

class VxfeddProcess {
 public:
  // Starts `binary` with `config_yaml` in `dir` (state dir, API socket and log under it) and
  // returns once its API socket accepts a connection; throws (vxfedd stopped) if it does not.
  VxfeddProcess(const std::string& binary, const std::string& dir, const std::string& config_yaml)
      : dir_(dir), socket_(dir + "/run/vxfedd.sock") {
    std::ofstream(dir + "/vxfedd.yaml") << config_yaml;
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string log = dir + "/vxfedd.log";
      std::freopen(log.c_str(), "w", stderr);
      ::execl(binary.c_str(), binary.c_str(), "--config", (dir + "/vxfedd.yaml").c_str(), "--state-dir",
              (dir + "/state").c_str(), "--socket", socket_.c_str(), "--foreground", nullptr);
      _exit(127);
    }
    auto probe = connect_unix(socket_, 10000);
    if (!probe) {
      stop();
      throw std::runtime_error("vxfedd did not start (" + probe.error() + "); its log: " + dir + "/vxfedd.log");
    }
    ::close(*probe);
  }
  ~VxfeddProcess() { stop(); }

  // SIGTERM and wait; the exit status (-1: killed by a signal).
  int stop() {
    if (pid_ <= 0) return exit_;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return exit_;
  }

  pid_t pid() const { return pid_; }
  const std::string& socket() const { return socket_; }

  // A field of /proc/PID/status in MiB ("VmRSS", "VmHWM"); -1 if unreadable.
  double status_mib(const std::string& field) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;  // kB
    return -1;
  }

 private:
  std::string dir_, socket_;
  pid_t pid_ = -1;
  int exit_ = -1;
};

}  // namespace vxfed::perf
