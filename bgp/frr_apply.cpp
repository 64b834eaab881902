#include "bgp/frr_apply.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "bgp/frr_render.hpp"
#include "bgp/process.hpp"
#include "common/read_file.hpp"

namespace vxfed::bgp {
namespace {

std::string dir_of(const std::string& path) {
  auto d = std::filesystem::path(path).parent_path().string();
  return d.empty() ? "." : d;
}

}  // namespace

std::vector<std::string> vtysh_command(const FrrSettings& s) {
  std::vector<std::string> argv{s.vtysh};
  if (!s.vty_socket_dir.empty()) argv.insert(argv.end(), {"--vty_socket", s.vty_socket_dir});
  argv.insert(argv.end(), {"--config_dir", dir_of(s.config_path)});
  return argv;
}

Status write_config_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".vxfed-tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return make_error("cannot write " + tmp + ": " + std::strerror(errno));
  std::size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error("cannot write " + tmp + ": " + std::strerror(e));
    }
    off += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, 0640);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return make_error("cannot flush " + tmp + ": " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return make_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
  }
  return {};
}

namespace {

std::vector<std::string> reload_command(const FrrSettings& s, const char* mode) {
  const std::string dir = dir_of(s.config_path);
  std::vector<std::string> argv{"python3", s.reload_script, mode, "--stdout", "--log-level", "warning",
                                "--bindir", dir_of(s.vtysh), "--confdir", dir, "--rundir", dir};
  if (!s.vty_socket_dir.empty()) argv.insert(argv.end(), {"--vty_socket", s.vty_socket_dir});
  argv.push_back(s.config_path);
  return argv;
}

std::string lines_to_add(const std::string& test_output) {
  // frr-reload --test prints "Lines To Delete" and "Lines To Add" sections (each under a line
  // of '='), the latter only when there is something to add.
  const auto at = test_output.find("Lines To Add");
  return at == std::string::npos ? std::string() : test_output.substr(at);
}

}  // namespace

Result<ApplyReport> apply_frr_config(const FrrSettings& s, const std::string& text) {
  if (auto st = write_config_file(s.config_path, text); !st) return make_error(st.error());
  ApplyReport report;
  if (s.apply == ApplyMode::kNone) return report;
  std::vector<std::string> argv;
  if (s.apply == ApplyMode::kReload) {
    argv = reload_command(s, "--reload");
  } else {
    argv = vtysh_command(s);
    argv.insert(argv.end(), {"-f", s.config_path});
  }
  auto run = run_command(argv, std::chrono::seconds(60));
  if (!run) return make_error(run.error());
  report.seconds = run->seconds;
  report.output = redact_frr_text(run->output);
  if (run->exit_code == 0) return report;
  const std::string failed = "applying " + s.config_path + " with " + to_string(s.apply) + " failed (exit " +
                             std::to_string(run->exit_code) + "): " + report.output;
  if (s.apply != ApplyMode::kReload) return make_error(failed);
  // frr-reload's exit status is not the verdict: its second pass runs every line its first pass
  // added once more, and FRR 8.4 refuses a per-neighbour graceful-restart mode the neighbour
  // already has ("not valid at this moment"; bgpd logs "Invalid bgp graceful restart command
  // used !"). So every apply that adds a neighbour with its own mode (a peer that differs from
  // the global mode) exits 1 with the mode in force (docs/bgp.md, "Applying"). The verdict is
  // whether FRR now holds every line of the file: frr-reload --test's difference has nothing
  // left to add.
  auto check = run_command(reload_command(s, "--test"), std::chrono::seconds(60));
  if (!check) return make_error(failed + "; checking the running config: " + check.error());
  report.seconds += check->seconds;
  const std::string missing = redact_frr_text(lines_to_add(check->output));
  if (check->exit_code != 0 || !missing.empty()) {
    return make_error(failed + "; FRR's running config still lacks: " +
                      (missing.empty() ? redact_frr_text(check->output) : missing));
  }
  report.output += "\n(frr-reload exited " + std::to_string(run->exit_code) +
                   "; FRR's running config holds every line of the file)";
  report.lines_refused_but_in_force = true;
  return report;
}

namespace {

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// The file's text, or nullopt when it cannot be read (not written yet).
std::optional<std::string> read_small_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return std::nullopt;
  return std::move(text).value();
}

}  // namespace

BgpdLoad bgpd_load_state(const std::optional<std::string>& marker, const std::string& bgpd_pid,
                         const std::function<bool(const std::string& pid)>& alive) {
  if (!marker) return BgpdLoad::kNotManaged;
  const std::string text = trimmed(*marker);
  if (text.empty() || text == "loading" || text == "stopped") return BgpdLoad::kLoading;
  if (text.rfind("loaded", 0) != 0) return BgpdLoad::kNotManaged;  // not frr-node.sh's: wait for nothing
  const std::string loaded_pid = trimmed(text.substr(6));
  if (loaded_pid.empty()) return BgpdLoad::kLoaded;  // no bgpd among its daemons
  return trimmed(bgpd_pid) == loaded_pid && alive(loaded_pid) ? BgpdLoad::kLoaded : BgpdLoad::kLoading;
}

BgpdLoadWait wait_for_bgpd_load(const std::string& run_dir, std::chrono::milliseconds max_wait,
                                std::chrono::milliseconds poll) {
  const auto start = std::chrono::steady_clock::now();
  const std::string marker_path = run_dir + "/" + kFrrNodeLoadFile;
  const std::string pid_path = run_dir + "/bgpd.pid";
  BgpdLoadWait w;
  for (;;) {
    w.bgpd_pid = trimmed(read_small_file(pid_path).value_or(""));
    // The container shares the host's PIDs (hostPID), as vxfedd's does: /proc tells.
    w.state = bgpd_load_state(read_small_file(marker_path), w.bgpd_pid, [](const std::string& pid) {
      return pid.find_first_not_of("0123456789") == std::string::npos && std::filesystem::exists("/proc/" + pid);
    });
    const auto now = std::chrono::steady_clock::now();
    w.waited_s = std::chrono::duration<double>(now - start).count();
    if (w.state != BgpdLoad::kLoading || now - start >= max_wait) return w;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace vxfed::bgp
