#include "cni/delegate.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

extern char** environ;

namespace vxfed::cni {

Expected<std::string> find_plugin(const std::string& type, const std::vector<std::string>& dirs) {
  if (type.find('/') != std::string::npos)
    return cni_error(kInvalidConfig, "plugin type \"" + type + "\" names a path; it must be a file name in CNI_PATH");
  std::string searched;
  for (const auto& dir : dirs) {
    const std::string candidate = dir + "/" + type;
    struct stat st{};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    searched += (searched.empty() ? "" : ", ") + dir;
  }
  return cni_error(kInvalidConfig, "IPAM plugin \"" + type + "\" was not found in CNI_PATH",
                   "searched: " + (searched.empty() ? std::string("(CNI_PATH is empty)") : searched));
}

Expected<ExecOutput> exec_plugin(const std::string& program, const std::map<std::string, std::string>& env_overrides,
                                 const std::string& input, int timeout_ms) {
  // Environment: ours, with the overrides replacing same-named variables.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos && env_overrides.count(entry.substr(0, eq))) continue;
    env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env_overrides) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC))
    return cni_error(kIoFailure, "cannot create pipes for the IPAM plugin", std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::string prog = program;
  char* argv[] = {prog.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    return cni_error(kIoFailure, "cannot run " + program, std::strerror(rc));
  }

  ExecOutput result;
  std::size_t written = 0;
  int in_fd = in[1];
  if (input.empty()) {
    ::close(in_fd);
    in_fd = -1;
  }
  int out_fd = out[0], err_fd = err[0];
  ::fcntl(in_fd, F_SETFL, O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  while (out_fd >= 0 || err_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (::poll(fds, n, static_cast<int>(left)) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w = ::write(in_fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 && errno != EAGAIN) written = input.size();
        if (written >= input.size()) {
          ::close(in_fd);
          in_fd = -1;
        }
      } else {
        char buf[4096];
        const ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
        if (r > 0) {
          (fds[i].fd == out_fd ? result.out : result.err).append(buf, static_cast<std::size_t>(r));
        } else if (r == 0 || errno != EAGAIN) {
          ::close(fds[i].fd);
          (fds[i].fd == out_fd ? out_fd : err_fd) = -1;
        }
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd})
    if (fd >= 0) ::close(fd);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return cni_error(kIpamFailure, program + " did not finish within " + std::to_string(timeout_ms) + " ms");
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

Expected<ExecOutput> IpamDelegate::run(const std::string& command, const std::string& container_id,
                                       const std::string& ifname, const std::string& netns, const std::string& version) {
  auto program = find_plugin(conf_.ipam_type, env_.path);
  if (!program) return program.error();
  std::map<std::string, std::string> env = {
      {"CNI_COMMAND", command},
      {"CNI_CONTAINERID", container_id.empty() ? env_.container_id : container_id},
      {"CNI_IFNAME", ifname.empty() ? env_.ifname : ifname},
      {"CNI_NETNS", container_id.empty() ? env_.netns : netns},
  };
  // The reference IPAM plugins refuse CNI_ARGS keys they do not know (K8S_POD_*) unless
  // IgnoreUnknown is set; vxfed accepts the K8S_POD_* keys itself, so a runtime that omits
  // IgnoreUnknown must not make IPAM fail. Every real runtime sets it already.
  if (!env_.args.empty() && !env_.arg_map.count("IgnoreUnknown")) env["CNI_ARGS"] = "IgnoreUnknown=1;" + env_.args;
  return exec_plugin(*program, env, command == "VERSION" ? std::string{} : ipam_stdin(conf_, version), 60000);
}

CniError IpamDelegate::failure(const std::string& command, const ExecOutput& out) const {
  const std::string who = "IPAM plugin \"" + conf_.ipam_type + "\" " + command;
  auto j = nlohmann::json::parse(out.out, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("msg")) {
    const int code = j.value("code", 0);
    std::string msg = j["msg"].is_string() ? j["msg"].get<std::string>() : j["msg"].dump();
    std::string details = j.contains("details") && j["details"].is_string() ? j["details"].get<std::string>() : "";
    // A code from the spec's range keeps its meaning; the plugin's own codes (host-local
    // reports exhaustion as 999) become ours, with its text.
    const int mapped = (code >= 1 && code < 100) ? code : kIpamFailure;
    return cni_error(mapped, who + " failed: " + msg, details);
  }
  std::string text = out.err.empty() ? out.out : out.err;
  if (text.size() > 2000) text.resize(2000);
  return cni_error(kIpamFailure, who + " failed (exit " + std::to_string(out.exit_code) + ")", text);
}

namespace {

// The version an IPAM plugin binary was negotiated down to, remembered in the state dir by
// the binary's path, size and mtime: without it every 1.1.0 ADD/DEL would run Debian's
// host-local three times (refusal, VERSION, retry).
std::string version_cache_key(const std::string& program) {
  struct stat st{};
  if (::stat(program.c_str(), &st) != 0) return {};
  return program + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

std::string read_cached_version(const std::string& state_dir, const std::string& key, const std::string& ours) {
  std::ifstream in(state_dir + "/ipam-versions.json");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains(key) || !j[key].is_object()) return {};
  const auto& e = j[key];
  if (e.value("ours", "") != ours) return {};
  return e.value("theirs", "");
}

void write_cached_version(const std::string& state_dir, const std::string& key, const std::string& ours,
                          const std::string& theirs) {
  const std::string path = state_dir + "/ipam-versions.json";
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
  j[key] = {{"ours", ours}, {"theirs", theirs}};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  { std::ofstream(tmp) << j.dump(2) << "\n"; }
  if (::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace

Expected<ExecOutput> IpamDelegate::run_negotiated(const std::string& command, const std::string& container_id,
                                                  const std::string& ifname, const std::string& netns) {
  std::string key;
  if (auto program = find_plugin(conf_.ipam_type, env_.path)) key = version_cache_key(*program);
  if (!key.empty()) {
    const std::string cached = read_cached_version(conf_.state_dir, key, conf_.cni_version);
    if (!cached.empty() && cached != conf_.cni_version) {
      auto out = run(command, container_id, ifname, netns, cached);
      if (out && out->exit_code == 0) return out;
      // The cache may be stale (plugin replaced in place): fall through to negotiate again.
    }
  }
  auto out = run(command, container_id, ifname, netns, conf_.cni_version);
  if (!out) return out;
  if (out->exit_code == 0) return out;
  auto err = nlohmann::json::parse(out->out, nullptr, false);
  if (err.is_discarded() || !err.is_object() || err.value("code", 0) != kIncompatibleVersion) return out;
  auto info = run("VERSION", container_id, ifname, netns, conf_.cni_version);
  if (!info || info->exit_code != 0) return out;
  auto vj = nlohmann::json::parse(info->out, nullptr, false);
  if (vj.is_discarded() || !vj.contains("supportedVersions") || !vj["supportedVersions"].is_array()) return out;
  std::vector<std::string> theirs;
  for (const auto& v : vj["supportedVersions"])
    if (v.is_string()) theirs.push_back(v.get<std::string>());
  auto common = highest_common(theirs, conf_.cni_version);
  if (!common || *common == conf_.cni_version) return out;
  auto retried = run(command, container_id, ifname, netns, *common);
  if (retried && retried->exit_code == 0 && !key.empty())
    write_cached_version(conf_.state_dir, key, conf_.cni_version, *common);
  return retried;
}

Expected<CniResult> IpamDelegate::add() {
  auto out = run_negotiated("ADD", {}, {}, {});
  if (!out) return out.error();
  if (out->exit_code != 0) return failure("ADD", *out);
  auto j = nlohmann::json::parse(out->out, nullptr, false);
  if (j.is_discarded())
    return cni_error(kDecodeFailure, "IPAM plugin \"" + conf_.ipam_type + "\" printed a result that is not JSON",
                     out->out.substr(0, 2000));
  auto r = parse_result(j);
  if (!r) return cni_error(kDecodeFailure, "IPAM plugin \"" + conf_.ipam_type + "\": " + r.error().msg);
  return r;
}

Done IpamDelegate::del(const std::string& container_id, const std::string& ifname, const std::string& netns) {
  auto out = run_negotiated("DEL", container_id, ifname, netns);
  if (!out) return out.error();
  if (out->exit_code != 0) return failure("DEL", *out);
  return done();
}

Done IpamDelegate::check() {
  auto out = run_negotiated("CHECK", {}, {}, {});
  if (!out) return out.error();
  if (out->exit_code != 0) return failure("CHECK", *out);
  return done();
}

}  // namespace vxfed::cni
