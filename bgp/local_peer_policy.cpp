#include "bgp/local_peer_policy.hpp"

#include <sys/socket.h>

#include <cerrno>

#include <spdlog/spdlog.h>

#include "common/peer_credentials.hpp"

namespace vxfed::bgp {

using boost::asio::ip::tcp;

void log_refusal(std::string_view tag, tcp::socket& candidate, const Refusal& refusal) {
  boost::system::error_code ec;
  const auto peer = candidate.remote_endpoint(ec);
  spdlog::warn("{}: refused a connection from {}: {}", tag,
               ec ? std::string("(unknown peer)") : peer.address().to_string() + ":" + std::to_string(peer.port()),
               refusal.why);
}

Status listen_on_loopback(tcp::acceptor& acceptor, const tcp::endpoint& listen, std::string_view what,
                          std::string_view peer, std::string_view hint) {
  if (!listen.address().is_loopback())
    return make_error(std::string(what) + ": listen address " + listen.address().to_string() +
                      " is not a loopback address: " + std::string(peer) +
                      " runs on this node, and nobody else may feed it routes");
  boost::system::error_code ec;
  acceptor.open(listen.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(listen, ec);
  if (!ec) acceptor.listen(1, ec);
  if (ec) {
    return make_error(std::string(what) + " cannot listen on " + listen.address().to_string() + ":" +
                      std::to_string(listen.port()) + ": " + ec.message() + " (" + std::string(hint) + ")");
  }
  return {};
}

std::optional<Refusal> check_local_peer(tcp::socket& candidate, const LocalPeerPolicy& policy, tcp::socket* current,
                                        std::string_view peer) {
  boost::system::error_code ec;
  const auto remote = candidate.remote_endpoint(ec);
  const auto local = ec ? tcp::endpoint{} : candidate.local_endpoint(ec);
  if (ec || !remote.address().is_v4() || !remote.address().is_loopback())
    return Refusal{RefusalReason::not_loopback, "not a loopback peer"};
  if (policy.peer_uid) {
    // The peer's own socket is the row whose local end is its endpoint: its uid is who opened it.
    auto uid = tcp_peer_uid(remote.address().to_v4().to_uint(), remote.port(), local.address().to_v4().to_uint(),
                            local.port());
    if (!uid)
      return Refusal{RefusalReason::wrong_user, "cannot tell who owns its socket: " + uid.error()};
    if (*uid != *policy.peer_uid)
      return Refusal{RefusalReason::wrong_user, "its socket belongs to uid " + std::to_string(*uid) + ", not " +
                                                    std::string(peer) + "'s uid " + std::to_string(*policy.peer_uid)};
  }
  if (current && peer_still_there(*current))
    return Refusal{RefusalReason::busy,
                   std::string(peer) + "'s connection is up; a second one may not replace it"};
  return std::nullopt;
}

bool peer_still_there(tcp::socket& sock) {
  char byte;
  const ssize_t n = ::recv(sock.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return true;
  if (n == 0) return false;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

}  // namespace vxfed::bgp
