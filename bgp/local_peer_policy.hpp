// Who may feed vxfedd routes over loopback TCP: the accept policy the FPM server (zebra) and the
// BMP station (bgpd) share. FRR's daemons connect *out* to these listeners, and whatever they
// send becomes routes and VTEPs allowed to send us VXLAN, so:
//   - the listener binds to a loopback address only (listen_on_loopback refuses anything else);
//   - an accepted peer must be on 127.0.0.0/8;
//   - when the policy names a uid (the user FRR runs as), the peer's socket must belong to it:
//     the uid column of /proc/net/tcp for the peer's end, the kernel's word, not the peer's;
//   - one session at a time: while the current connection is healthy a second one is refused
//     (FRR's own reconnect comes after its old socket closed, which we see first or find by
//     peeking at the old socket: peer_still_there).
// Each server counts the refusals by reason in its own stats and logs them.
#pragma once

#include <utility>  // before asio: Boost 1.74 awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "common/result.hpp"

namespace vxfed::bgp {

struct LocalPeerPolicy {
  std::optional<uid_t> peer_uid;  // nullopt: any local process (tests, benchmarks)
};

enum class RefusalReason : std::uint8_t {
  not_loopback,  // peer address not 127.0.0.0/8 (or unknown)
  wrong_user,    // peer's socket owned by another uid, or its owner could not be found
  busy,          // a healthy session already exists
};

struct Refusal {
  RefusalReason reason;
  std::string why;  // a sentence for the log
};


// Opens, binds and listens (backlog 1) on `listen`, which must be a loopback address. `what`
// names the listener in errors ("FPM server"), `peer` who connects to it ("zebra"), `hint`
// ends a bind error (what else may hold the port).
Status listen_on_loopback(boost::asio::ip::tcp::acceptor& acceptor, const boost::asio::ip::tcp::endpoint& listen,
                          std::string_view what, std::string_view peer, std::string_view hint);

// Whether `candidate` may become the session, given the current one (nullptr when none).
// nullopt: accept. `peer` names who is expected ("zebra", "bgpd") in the sentence.
std::optional<Refusal> check_local_peer(boost::asio::ip::tcp::socket& candidate, const LocalPeerPolicy& policy,
                                        boost::asio::ip::tcp::socket* current, std::string_view peer);

// check_local_peer, then for a refusal: counted in `stats` (FpmStats and BmpStats carry the
// same three fields, refused_not_loopback/_wrong_user/_busy) and logged as "<tag>: refused a
// connection from ADDR:PORT: why". True when `candidate` may become the session.
void log_refusal(std::string_view tag, boost::asio::ip::tcp::socket& candidate, const Refusal& refusal);
template <class Stats>
bool admit_local_peer(boost::asio::ip::tcp::socket& candidate, const LocalPeerPolicy& policy,
                      boost::asio::ip::tcp::socket* current, std::string_view peer, std::string_view tag,
                      Stats& stats) {
  auto refused = check_local_peer(candidate, policy, current, peer);
  if (!refused) return true;
  switch (refused->reason) {
    case RefusalReason::not_loopback: ++stats.refused_not_loopback; break;
    case RefusalReason::wrong_user: ++stats.refused_wrong_user; break;
    case RefusalReason::busy: ++stats.refused_busy; break;
  }
  log_refusal(tag, candidate, *refused);
  return false;
}

// Whether a connected socket's peer is still there: a peek returning 0 bytes means it closed
// (EOF not yet read by our async read); EAGAIN or bytes waiting mean it is alive.
bool peer_still_there(boost::asio::ip::tcp::socket& sock);

}  // namespace vxfed::bgp
