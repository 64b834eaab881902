#include "bgp/route_cache.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace vxfed::bgp {
namespace {

constexpr int kVersion = 1;
using json = nlohmann::json;

Result<RemoteRoute> decode_route(const json& j, const std::string& where) {
  if (!j.is_object()) return make_error(where + ": must be an object");
  RemoteRoute r;
  auto str = [&](const char* key, std::string& out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return {};
    if (!it->is_string()) return make_error(where + "." + key + ": must be a string");
    out = it->get<std::string>();
    return {};
  };
  std::string prefix;
  if (auto ok = str("prefix", prefix); !ok) return make_error(ok.error());
  auto p = net::Ipv4Prefix::parse(prefix);
  if (!p) return make_error(where + ".prefix: " + p.error());
  r.prefix = *p;
  auto vteps = j.find("vteps");
  if (vteps == j.end() || !vteps->is_array() || vteps->empty())
    return make_error(where + ".vteps: must be a non-empty list");
  for (const auto& v : *vteps) {
    auto a = v.is_string() ? net::Ipv4Addr::parse(v.get<std::string>()) : Result<net::Ipv4Addr>(make_error("must be a string"));
    if (!a) return make_error(where + ".vteps: " + a.error());
    r.vteps.push_back(*a);
  }
  auto vni = j.find("vni");
  if (vni == j.end() || !vni->is_number_unsigned() || vni->get<std::uint64_t>() > 0xffffffu)
    return make_error(where + ".vni: must be 0..16777215");
  r.vni = static_cast<std::uint32_t>(vni->get<std::uint64_t>());
  std::string network, peer;
  if (auto ok = str("network", network); !ok) return make_error(ok.error());  // older files; unused
  if (auto ok = str("peer", peer); !ok) return make_error(ok.error());
  if (!peer.empty()) {
    auto a = net::Ipv4Addr::parse(peer);
    if (!a) return make_error(where + ".peer: " + a.error());
    r.peer = *a;
  }
  if (r.vni == 0 && network.empty()) return make_error(where + ": needs a vni or a network");
  return r;
}

}  // namespace

std::string encode_route_cache(const std::vector<RemoteRoute>& routes) {
  json list = json::array();
  for (const auto& r : routes) {
    json vteps = json::array();
    for (const auto& v : r.vteps) vteps.push_back(v.str());
    list.push_back({{"prefix", r.prefix.str()}, {"vteps", vteps}, {"vni", r.vni},
                    {"peer", r.peer.value != 0 ? r.peer.str() : ""}});
  }
  return json{{"version", kVersion}, {"routes", list}}.dump() + "\n";
}

Result<std::vector<RemoteRoute>> decode_route_cache(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return make_error("not a JSON object");
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int>() != kVersion)
    return make_error("version: must be " + std::to_string(kVersion));
  auto routes = doc.find("routes");
  if (routes == doc.end() || !routes->is_array()) return make_error("routes: must be a list");
  std::vector<RemoteRoute> out;
  out.reserve(routes->size());
  for (std::size_t i = 0; i < routes->size(); ++i) {
    auto r = decode_route((*routes)[i], "routes[" + std::to_string(i) + "]");
    if (!r) return make_error(r.error());
    out.push_back(std::move(*r));
  }
  return out;
}

Status save_route_cache(const std::string& path, const std::vector<RemoteRoute>& routes) {
  const std::string tmp = path + ".tmp";
  const std::string text = encode_route_cache(routes);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return make_error(tmp + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string err = tmp + ": write: " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error(err);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = path + ": rename: " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error(err);
  }
  return {};
}

Result<std::vector<RemoteRoute>> load_route_cache(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return std::vector<RemoteRoute>{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  auto routes = decode_route_cache(text.str());
  if (!routes) return make_error(path + ": " + routes.error());
  return routes;
}

}  // namespace vxfed::bgp
