// vxfed-scale-speaker: a BGP speaker standing for many nodes in the scale bed
// (harness/vxfed_harness/scale_bed.py, perf/federation/scale.py). It connects to each peer of
// its config (speaker_config.hpp), announces every route of the session once Established, in
// one pre-encoded buffer, and keeps the sessions up. Commands on stdin, one per line:
//   announce <peer> <local> <prefix> <next-hop>
//   withdraw <peer> <local> <prefix>
// SIGTERM or SIGINT: every session ends with a Cease NOTIFICATION (administrative shutdown),
// so that the peers withdraw all its routes, and the process exits 0.
//
// Every line of its log (stdout) starts with the wall-clock time, to set beside packet captures.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "common/read_file.hpp"
#include "perf/federation/speaker/peer_session.hpp"
#include "perf/federation/speaker/speaker_config.hpp"

namespace sp = vxfed::perf::speaker;

namespace {

void log_line(const std::string& text) {
  const double t = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::printf("%.6f %s\n", t, text.c_str());
  std::fflush(stdout);
}

// One command line; an error names what was wrong and changes nothing.
void run_command(const std::string& line, std::vector<sp::PeerSession>& sessions) {
  std::istringstream in(line);
  std::string verb, peer, local, prefix_text, next_hop_text;
  in >> verb >> peer >> local >> prefix_text;
  if (verb.empty()) return;
  if (verb != "announce" && verb != "withdraw") return log_line("command: unknown verb '" + verb + "': " + line);
  if (verb == "announce") in >> next_hop_text;
  auto prefix = vxfed::net::Ipv4Prefix::parse(prefix_text);
  if (!prefix) return log_line("command: prefix: " + prefix.error() + ": " + line);
  sp::PeerSession* target = nullptr;
  for (auto& s : sessions)
    if (s.config().peer.str() == peer && s.config().local.str() == local) target = &s;
  if (!target) return log_line("command: no session from " + local + " to " + peer + ": " + line);
  if (verb == "announce") {
    auto nh = vxfed::net::Ipv4Addr::parse(next_hop_text);
    if (!nh) return log_line("command: next hop: " + nh.error() + ": " + line);
    target->announce(sp::Route{*prefix, *nh});
    log_line(target->config().name() + ": announced " + prefix->str() + " next hop " + nh->str());
  } else if (target->withdraw(*prefix)) {
    log_line(target->config().name() + ": withdrew " + prefix->str());
  } else {
    log_line("command: " + target->config().name() + " never announced " + prefix->str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A BGP speaker standing for many nodes: announces each session's routes once Established"};
  std::string config_path;
  app.add_option("--config", config_path, "JSON: the sessions and their routes")->required();
  CLI11_PARSE(app, argc, argv);

  auto text = vxfed::read_file(config_path);
  if (!text) {
    std::fprintf(stderr, "vxfed-scale-speaker: %s\n", text.error().message().c_str());
    return 2;
  }
  auto configs = sp::parse_config(*text);
  if (!configs) {
    std::fprintf(stderr, "vxfed-scale-speaker: %s: %s\n", config_path.c_str(), configs.error().c_str());
    return 2;
  }

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  const int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    std::perror("vxfed-scale-speaker: signalfd");
    return 1;
  }

  std::vector<sp::PeerSession> sessions;
  std::size_t routes = 0;
  for (auto& c : *configs) {
    routes += c.routes.size();
    sessions.emplace_back(std::move(c), log_line);
  }
  log_line("started: " + std::to_string(sessions.size()) + " sessions, " + std::to_string(routes) + " routes");

  bool stdin_open = true, stopping = false;
  std::string pending;
  for (;;) {
    auto now = sp::Clock::now();
    bool all_closed = true;
    for (auto& s : sessions) {
      if (s.next_deadline() <= now) s.on_timer(now);
      all_closed = all_closed && s.state() == sp::PeerSession::State::closed;
    }
    if (stopping && all_closed) break;

    std::vector<pollfd> fds{{sfd, POLLIN, 0}, {stdin_open ? 0 : -1, POLLIN, 0}};
    for (auto& s : sessions) fds.push_back({s.fd(), s.events(), 0});
    auto next = sp::Clock::time_point::max();
    for (auto& s : sessions) next = std::min(next, s.next_deadline());
    int timeout_ms = 1000;
    if (next != sp::Clock::time_point::max())
      timeout_ms = static_cast<int>(std::clamp<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1, 0, 1000));
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      std::perror("vxfed-scale-speaker: poll");
      return 1;
    }
    now = sp::Clock::now();
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (::read(sfd, &info, sizeof info) == sizeof info) {}
      if (!stopping) {
        log_line("stopping: a Cease to every peer");
        stopping = true;
        for (auto& s : sessions) s.shut_down(now);
      }
    }
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      char buf[4096];
      const ssize_t n = ::read(0, buf, sizeof buf);
      if (n <= 0) {
        stdin_open = false;  // no more commands; the sessions stay up
      } else {
        pending.append(buf, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
          if (!stopping) run_command(pending.substr(0, nl), sessions);
      }
    }
    for (std::size_t i = 0; i < sessions.size(); ++i)
      if (fds[i + 2].revents && fds[i + 2].fd == sessions[i].fd()) sessions[i].on_ready(fds[i + 2].revents, now);
  }
  log_line("stopped");
  return 0;
}
