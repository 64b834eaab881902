// libFuzzer target: arbitrary bytes as an FPM stream, through the frame splitter, netlink
// framing check, route parser and route table, exactly as the FPM server feeds them.
// Crashes, sanitizer reports and out-of-bounds reads are the failures it looks for.
#include <cstddef>
#include <cstdint>

#include "bgp/fpm_parser.hpp"
#include "bgp/route_table.hpp"

using namespace vxfed::bgp;
using vxfed::net::Ipv4Addr, vxfed::net::Ipv4Prefix;

static std::vector<PeerConfig> fuzz_peers() {
  PeerConfig p;
  p.address = Ipv4Addr{0xc6120002};
  p.remote_asn = 65002;
  p.cluster = "b";
  p.vni = 1500;
  p.accept.push_back(PrefixMatch{Ipv4Prefix::make(0x0a000000, 8), 0, 32});
  PeerConfig q = p;
  q.address = Ipv4Addr{0xc6120003};
  q.vni = 0;
  q.network = "fed";
  q.accept = {PrefixMatch{Ipv4Prefix::make(0, 0), 0, 0}};
  return {p, q};
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static RouteTable* table = nullptr;
  if (!table) table = new RouteTable(fuzz_peers(), [](const std::string&) { return std::optional<std::uint32_t>(7); });
  fpm::Bytes rest(data, size);
  fpm::Frame f;
  bool resync = size > 0 && (data[0] & 0x80);
  if (resync) table->begin_resync();
  while (true) {
    auto st = fpm::parse_frame(rest, f);
    if (st == fpm::FrameStatus::kBadType) {
      rest = rest.subspan(f.length);
      continue;
    }
    if (st != fpm::FrameStatus::kOk) break;
    rest = rest.subspan(f.length);
    if (!fpm::netlink_framing_ok(f.payload)) continue;
    fpm::NetlinkIterator it(f.payload);
    fpm::Bytes msg;
    std::uint16_t type;
    while (it.next(msg, type)) {
      fpm::RouteMessage r;
      if (fpm::parse_route(msg, r) == fpm::RouteStatus::kRoute) table->apply(r);
    }
  }
  if (resync) table->end_resync();
  (void)table->take_pending();
  if (table->size() > 100000) {
    delete table;
    table = nullptr;
  }
  return 0;
}
