#include "bgp/route_cache.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

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
  // The GBP mark (absent in files of the previous release: no mark, plain VXLAN until BMP says).
  if (auto gbp = j.find("gbp"); gbp != j.end()) {
    if (!gbp->is_boolean()) return make_error(where + ".gbp: must be true or false");
    r.gbp_mark = gbp->get<bool>();
  }
  if (r.vni == 0 && network.empty()) return make_error(where + ": needs a vni or a network");
  return r;
}

}  // namespace

namespace {

// Appends one route's line (its leading separator included) to `out`. Addresses and prefixes
// need no escaping.
void append_route(std::string& out, const RemoteRoute& r, bool first) {
  out += first ? "\n{\"prefix\":\"" : ",\n{\"prefix\":\"";
  out += r.prefix.str();
  out += "\",\"vteps\":[";
  for (std::size_t k = 0; k < r.vteps.size(); ++k) {
    out += k == 0 ? "\"" : ",\"";
    out += r.vteps[k].str();
    out += '"';
  }
  out += "],\"vni\":";
  out += std::to_string(r.vni);
  out += ",\"peer\":\"";
  if (r.peer.value != 0) out += r.peer.str();
  out += r.gbp_mark ? "\",\"gbp\":true}" : "\"}";
}

std::string header() { return "{\"version\":" + std::to_string(kVersion) + ",\"routes\":["; }
constexpr std::string_view kTrailer = "]}\n";

}  // namespace

// Written directly, not through a JSON document: at a federation's 130,000 routes a DOM of
// them costs vxfedd ~100 MB for a moment (and glibc keeps most of it), every save.
std::string encode_route_cache(const std::vector<RemoteRoute>& routes) {
  std::string out = header();
  for (std::size_t i = 0; i < routes.size(); ++i) append_route(out, routes[i], i == 0);
  out += kTrailer;
  return out;
}

namespace {

// Parses the cache without holding all of it as a JSON document: each element of "routes" is
// built alone, decoded into a RemoteRoute and dropped (the document stays small whatever the
// route count). Everything else is kept as a document for the version and shape checks.
class StreamingDecoder : public nlohmann::json_sax<json> {
 public:
  json root;
  std::vector<RemoteRoute> routes;
  std::string route_error;  // the first route that did not decode

  bool null() override { return value(json(nullptr)); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(number_integer_t v) override { return value(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(json(v)); }
  bool string(string_t& v) override { return value(json(std::move(v))); }
  bool binary(binary_t& v) override { return value(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool key(string_t& k) override {
    keys_.back() = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool open(json container) {
    open_.push_back(std::move(container));
    keys_.emplace_back();
    return true;
  }
  bool close() {
    json done = std::move(open_.back());
    open_.pop_back();
    keys_.pop_back();
    return value(std::move(done));
  }
  bool value(json v) {
    if (open_.empty()) {
      root = std::move(v);
      return true;
    }
    if (open_.size() == 2 && open_[0].is_object() && keys_[0] == "routes" && open_[1].is_array()) {
      auto r = decode_route(v, "routes[" + std::to_string(next_route_++) + "]");
      if (!r) {
        route_error = r.error();
        return false;
      }
      routes.push_back(std::move(*r));
      return true;
    }
    json& parent = open_.back();
    if (parent.is_object()) parent[keys_.back()] = std::move(v);
    else parent.push_back(std::move(v));
    return true;
  }

  std::vector<json> open_;          // containers being filled, innermost last
  std::vector<std::string> keys_;   // per open container: its current key (objects)
  std::size_t next_route_ = 0;
};

}  // namespace

namespace {

template <typename Input>
Result<std::vector<RemoteRoute>> decode(Input&& input) {
  StreamingDecoder decoder;
  const bool parsed = json::sax_parse(std::forward<Input>(input), &decoder, json::input_format_t::json,
                                      /*strict=*/true);
  if (!decoder.route_error.empty()) return make_error(decoder.route_error);
  const json& doc = decoder.root;
  if (!parsed || !doc.is_object()) return make_error("not a JSON object");
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || version->get<int>() != kVersion)
    return make_error("version: must be " + std::to_string(kVersion));
  auto routes = doc.find("routes");
  if (routes == doc.end() || !routes->is_array()) return make_error("routes: must be a list");
  return std::move(decoder.routes);
}

}  // namespace

Result<std::vector<RemoteRoute>> decode_route_cache(std::string_view text) { return decode(text); }

// Streams the file in 64 KiB pieces: the whole text of 130,000 routes would be ~11 MB held at
// once, at every save.
Status save_route_cache(const std::string& path, const std::vector<RemoteRoute>& routes) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return make_error(tmp + ": " + std::strerror(errno));
  auto fail = [&](const std::string& what) {
    std::string err = tmp + ": " + what + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return make_error(err);
  };
  auto write_all = [fd](const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  };
  constexpr std::size_t kPiece = 64 * 1024;
  std::string piece = header();
  piece.reserve(kPiece + 256);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    append_route(piece, routes[i], i == 0);
    if (piece.size() >= kPiece) {
      if (!write_all(piece)) return fail("write");
      piece.clear();
    }
  }
  piece += kTrailer;
  if (!write_all(piece)) return fail("write");
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
  auto routes = decode(in);  // parsed as read: the file is never held whole
  if (!routes) return make_error(path + ": " + routes.error());
  return routes;
}

}  // namespace vxfed::bgp
