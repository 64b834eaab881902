// Helpers shared by the bgp unit tests: a temporary directory, route updates and zebra-style
// route messages as one line.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "bgp/fpm_parser.hpp"
#include "common/routes.hpp"

namespace vxfed::bgp::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/vxfed-bgp-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// "delta +10.245.0.0/16@1500[198.18.0.12]198.18.0.2 -10.246.0.0/16@2000": "full" or "delta",
// then the upserts (prefix@vni[vteps]peer) and removals (prefix@vni) in sorted order.
inline std::string update_text(const RouteUpdate& u) {
  std::vector<std::string> parts;
  for (const auto& r : u.upserts) {
    std::string v = "+" + r.prefix.str() + "@" + std::to_string(r.vni) + "[";
    for (std::size_t i = 0; i < r.vteps.size(); ++i) v += (i ? "," : "") + r.vteps[i].str();
    parts.push_back(v + "]" + r.peer.str());
  }
  for (const auto& k : u.removals) parts.push_back("-" + k.prefix.str() + "@" + std::to_string(k.vni));
  std::sort(parts.begin(), parts.end());
  std::string s = u.full ? "full" : "delta";
  for (const auto& p : parts) s += " " + p;
  return s;
}

// A route message as one line: "+10.245.1.0/24 via 198.18.0.2,198.18.0.3" or "-10.245.1.0/24".
inline std::string route_line(const fpm::RouteMessage& r) {
  std::string s = (r.is_delete ? "-" : "+") + r.prefix.str();
  for (std::uint8_t i = 0; i < r.next_hop_count; ++i)
    s += (i ? "," : " via ") + net::Ipv4Addr{r.next_hops[i].gateway}.str();
  return s;
}

}  // namespace vxfed::bgp::testing
