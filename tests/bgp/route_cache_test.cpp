// The route cache vxfedd keeps across restarts (bgp/route_cache.hpp): round trip, every
// malformed input refused with the entry and field named, atomic file replacement.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "bgp/route_cache.hpp"
#include "common/read_file.hpp"
#include "tests/bgp/test_support.hpp"

namespace {

using namespace vxfed::bgp;
using vxfed::bgp::testing::TempDir;
using vxfed::net::Ipv4Addr, vxfed::net::Ipv4Prefix;
using vxfed::RemoteRoute;

RemoteRoute route(const char* prefix, std::vector<const char*> vteps, std::uint32_t vni, const char* peer) {
  RemoteRoute r;
  r.prefix = *Ipv4Prefix::parse(prefix);
  for (auto* v : vteps) r.vteps.push_back(*Ipv4Addr::parse(v));
  r.vni = vni;
  if (*peer) r.peer = *Ipv4Addr::parse(peer);
  return r;
}

std::vector<RemoteRoute> sample() {
  return {route("10.245.0.0/16", {"198.18.0.2"}, 1000, "198.18.0.2"),
          route("10.246.8.0/24", {"198.18.0.3", "198.18.0.4"}, 2000, "198.18.0.3"),
          route("0.0.0.0/0", {"198.18.0.9"}, 16777215, "")};
}

TEST(RouteCache, RoundTrip) {
  auto text = encode_route_cache(sample());
  auto back = decode_route_cache(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, sample());
  auto empty = decode_route_cache(encode_route_cache({}));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(RouteCache, MalformedIsRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not a JSON object"},
      {"[1,2]", "not a JSON object"},
      {R"({"routes":[]})", "version"},
      {R"({"version":2,"routes":[]})", "version"},
      {R"({"version":1})", "routes: must be a list"},
      {R"({"version":1,"routes":{}})", "routes: must be a list"},
      {R"({"version":1,"routes":[7]})", "routes[0]: must be an object"},
      {R"({"version":1,"routes":[{"prefix":"10.245.1.0/16","vteps":["198.18.0.2"],"vni":5}]})", "routes[0].prefix"},
      {R"({"version":1,"routes":[{"prefix":42,"vteps":["198.18.0.2"],"vni":5}]})", "routes[0].prefix"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vni":5}]})", "routes[0].vteps"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":[],"vni":5}]})", "routes[0].vteps"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.256"],"vni":5}]})", "routes[0].vteps"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":[3],"vni":5}]})", "routes[0].vteps"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"]}]})", "routes[0].vni"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":-1}]})", "routes[0].vni"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":16777216}]})", "routes[0].vni"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":0}]})", "routes[0]: needs a vni or a network"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":1,"network":7}]})", "routes[0].network"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":1},)"
       R"({"prefix":"10.1.0.0/16","vteps":["198.18.0.2"],"vni":1,"peer":false}]})", "routes[1].peer"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":1,"peer":"peer-b"}]})", "routes[0].peer"},
      {R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":1})", "not a JSON object"},
  };
  for (const auto& [text, want] : cases) {
    auto r = decode_route_cache(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().find(want), std::string::npos) << text << " -> " << r.error();
  }
  // Files written while routes carried their network's name still load: the name is not kept
  // (the route source gives a replayed route the VNI its peer's network has now).
  auto ok = decode_route_cache(
      R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":0,"network":"fed","peer":"198.18.0.2"}]})");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->at(0).vni, 0u);
  EXPECT_EQ(ok->at(0).peer.str(), "198.18.0.2");
}

// The GBP mark (docs/bgp.md, "The GBP mark") is kept across a restart; the previous release's
// files have none (plain VXLAN until BMP says); a wrong type is refused naming the field.
TEST(RouteCache, GbpMarkRoundTripsAndOlderFilesHaveNone) {
  auto routes = sample();
  routes[1].gbp_mark = true;
  const std::string text = encode_route_cache(routes);
  EXPECT_NE(text.find("\"gbp\":true"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"gbp\":false"), std::string::npos) << "an unmarked route writes nothing";
  auto back = decode_route_cache(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, routes);
  auto old = decode_route_cache(R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":1}]})");
  ASSERT_TRUE(old.ok()) << old.error();
  EXPECT_FALSE(old->at(0).gbp_mark);
  auto bad = decode_route_cache(
      R"({"version":1,"routes":[{"prefix":"10.245.0.0/16","vteps":["198.18.0.2"],"vni":1,"gbp":"yes"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("routes[0].gbp"), std::string::npos) << bad.error();
}

TEST(RouteCache, SaveAndLoad) {
  TempDir dir;
  const std::string file = (dir.path / "bgp-routes.json").string();
  auto absent = load_route_cache(file);
  ASSERT_TRUE(absent.ok()) << absent.error();
  EXPECT_TRUE(absent->empty());

  ASSERT_TRUE(save_route_cache(file, sample()).ok());
  auto loaded = load_route_cache(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(*loaded, sample());
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_FALSE(std::filesystem::exists(file + ".tmp"));

  // Replaced whole, not appended to.
  ASSERT_TRUE(save_route_cache(file, {sample()[1]}).ok());
  loaded = load_route_cache(file);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(*loaded, std::vector<RemoteRoute>{sample()[1]});
}

// A federation's table: written in pieces and read as a stream, it comes back whole and equal
// to what the text encoder writes in one go.
TEST(RouteCache, ManyRoutesRoundTripThroughTheFile) {
  TempDir dir;
  const std::string file = (dir.path / "bgp-routes.json").string();
  std::vector<RemoteRoute> many;
  for (std::uint32_t i = 0; i < 20000; ++i) {
    RemoteRoute r;
    r.prefix = Ipv4Prefix::make(0x0a000000u + (i << 6), 26);
    r.vni = 1500 + i % 3;
    r.vteps.push_back(Ipv4Addr{0xc6120002u + i % 1000});
    if (i % 7 == 0) r.vteps.push_back(Ipv4Addr{0xc6130002u + i % 500});
    r.peer = Ipv4Addr{i % 2 ? 0xc613fffeu : 0u};
    many.push_back(std::move(r));
  }
  ASSERT_TRUE(save_route_cache(file, many).ok());
  auto text = vxfed::read_file(file);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, encode_route_cache(many));
  auto loaded = load_route_cache(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(*loaded, many);
}

TEST(RouteCache, DamagedFileIsAnErrorNamingIt) {
  TempDir dir;
  const std::string file = (dir.path / "bgp-routes.json").string();
  std::ofstream(file) << "{\"version\":1,\"routes\":[{\"prefix\":\"10.2";   // torn write
  auto r = load_route_cache(file);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(file), std::string::npos) << r.error();
}

TEST(RouteCache, UnwritableDirectoryIsAnError) {
  auto r = save_route_cache("/nonexistent-vxfed-dir/bgp-routes.json", sample());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent-vxfed-dir/bgp-routes.json.tmp"), std::string::npos) << r.error();
}

}  // namespace
