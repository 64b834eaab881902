#include "common/peer_credentials.hpp"

#include <arpa/inet.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/read_file.hpp"

namespace vxfed {

Result<PeerCredentials> unix_peer_credentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return make_error(std::string("SO_PEERCRED: ") + std::strerror(errno));
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

std::string describe(const PeerCredentials& p) {
  return "pid " + std::to_string(p.pid) + " uid " + std::to_string(p.uid) + " gid " + std::to_string(p.gid);
}

bool in_supplementary_groups(pid_t pid, gid_t group) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Groups:", 0) != 0) continue;
    std::istringstream in(line.substr(7));
    unsigned long g;
    while (in >> g)
      if (g == group) return true;
  }
  return false;
}

bool local_peer_allowed(const PeerCredentials& peer, std::optional<gid_t> group) {
  if (peer.uid == 0 || peer.uid == ::geteuid()) return true;
  if (!group) return false;
  return peer.gid == *group || in_supplementary_groups(peer.pid, *group);
}

namespace {

// "0100007F:0A3C" -> (ip, port), both host order. /proc/net/tcp prints the address as the
// network-order word read as a native integer (%08X), the port as plain hex.
bool parse_hex_endpoint(std::string_view text, std::uint32_t& ip, std::uint16_t& port) {
  if (text.size() != 13 || text[8] != ':') return false;
  std::uint32_t raw = 0;
  unsigned p = 0;
  auto r1 = std::from_chars(text.data(), text.data() + 8, raw, 16);
  auto r2 = std::from_chars(text.data() + 9, text.data() + 13, p, 16);
  if (r1.ec != std::errc() || r1.ptr != text.data() + 8 || r2.ec != std::errc() || r2.ptr != text.data() + 13)
    return false;
  ip = ntohl(raw);
  port = static_cast<std::uint16_t>(p);
  return true;
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::optional<uid_t> tcp_socket_uid(std::string_view table, std::uint32_t local_ip, std::uint16_t local_port,
                                    std::uint32_t remote_ip, std::uint16_t remote_port) {
  // Columns: sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
  bool header = true;
  while (!table.empty()) {
    const auto nl = table.find('\n');
    const std::string_view line = table.substr(0, nl);
    table = nl == std::string_view::npos ? std::string_view() : table.substr(nl + 1);
    if (header) {  // the first line names the columns
      header = false;
      continue;
    }
    const auto w = words(line);
    if (w.size() < 8) continue;
    std::uint32_t lip, rip;
    std::uint16_t lport, rport;
    if (!parse_hex_endpoint(w[1], lip, lport) || !parse_hex_endpoint(w[2], rip, rport)) continue;
    if (lip != local_ip || lport != local_port || rip != remote_ip || rport != remote_port) continue;
    unsigned long uid = 0;
    auto r = std::from_chars(w[7].data(), w[7].data() + w[7].size(), uid);
    if (r.ec != std::errc() || r.ptr != w[7].data() + w[7].size()) return std::nullopt;
    return static_cast<uid_t>(uid);
  }
  return std::nullopt;
}

Result<uid_t> tcp_peer_uid(std::uint32_t peer_ip, std::uint16_t peer_port, std::uint32_t our_ip,
                           std::uint16_t our_port) {
  auto text = read_file("/proc/net/tcp");
  if (!text) return make_error(text.error().message());
  auto uid = tcp_socket_uid(*text, peer_ip, peer_port, our_ip, our_port);
  if (!uid) return make_error("the peer's socket is not in this namespace's /proc/net/tcp (not a local process?)");
  return *uid;
}

Result<uid_t> uid_of_user(const std::string& name) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  const int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc != 0) return make_error("cannot look up user '" + name + "': " + std::strerror(rc));
  if (!found) return make_error("there is no user '" + name + "' on this machine");
  return found->pw_uid;
}

}  // namespace vxfed
