// libFuzzer target: arbitrary bytes as a BMP stream from bgpd, fed to the session in pieces
// whose sizes the input's first byte chooses (messages cross read boundaries as they do on a
// socket). Besides crashes and sanitizer reports it checks the session's promises: nothing is
// read after a framing error, and every route event comes from a peer the session has up.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "bgp/bmp_session.hpp"

using namespace vxfed::bgp::bmp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Session* session = nullptr;
  Session s(Session::Handlers{
      nullptr, nullptr,
      [&session](const PeerKey& key, const Update& u) {
        if (!session->peers_up().count(key)) std::abort();  // routes only from a peer that is up
        for (const auto& p : u.announced)
          if (p.len > 32 || (p.addr & ~vxfed::net::prefix_mask(p.len)) != 0) std::abort();
        if (!u.announced.empty() && !u.next_hop) std::abort();
      },
      nullptr, nullptr});
  session = &s;
  const std::size_t piece = 1 + data[0] % 64;
  Bytes rest(data + 1, size - 1);
  while (!rest.empty()) {
    const std::size_t n = piece < rest.size() ? piece : rest.size();
    const bool ok = s.feed(rest.first(n));
    if (!ok && !s.failed()) std::abort();
    if (s.failed() && s.feed(rest.first(n))) std::abort();  // nothing read after a framing error
    rest = rest.subspan(n);
  }
  return 0;
}
