// A BGP adapter without FRR or FPM for unit tests of the route source (bgp/route_source.hpp)
// and of vxfedd around it: the real route table (bgp/route_table.hpp) fed with route messages
// the test makes up, handing its changes to on_routes the way bgp::Adapter does.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "bgp/adapter.hpp"
#include "bgp/fpm_encoder.hpp"

namespace vxfed::bgp::testing {

class FakeAdapter : public AdapterInterface {
 public:
  explicit FakeAdapter(AdapterOptions options)
      : options_(std::move(options)), table_(options_.config.peers, options_.vni_of) {}

  // ---- AdapterInterface
  Status start() override {
    ++starts;
    if (failures_before_start > 0) {
      --failures_before_start;
      return make_error("bgp: FRR is not running (fake)");
    }
    started = true;
    return {};
  }
  void stop() override {
    ++stops;
    started = false;
  }
  Status reconfigure(BgpConfig config, std::vector<net::Ipv4Prefix> advertise) override {
    ++reconfigures;
    options_.config = std::move(config);
    options_.advertise = std::move(advertise);
    table_.set_peers(options_.config.peers);
    flush();
    return {};
  }
  void set_advertised(std::vector<net::Ipv4Prefix> advertise) override {
    ++readvertises;
    options_.advertise = std::move(advertise);
  }
  void set_gbp_mark(bool mark, std::function<void(Status)> done) override {
    ++gbp_marks;
    options_.config.gbp_mark = mark;
    if (done) done({});
  }
  void networks_changed() override {
    ++reresolves;
    table_.reresolve();
    flush();
  }
  std::vector<RemoteRoute> routes() const override { return table_.snapshot(); }
  std::vector<PeerStatus> peers() const override {
    std::vector<PeerStatus> out;
    for (const auto& p : options_.config.peers) out.push_back(PeerStatus{p.address.str(), p.remote_asn, p.cluster});
    return out;
  }
  AdapterStats stats() const override {
    AdapterStats s;
    s.fpm_connected = started;
    s.feed_connected = started;
    s.routes = table_.size();
    return s;
  }

  // ---- what zebra would do over FPM
  void learn(const char* prefix, std::initializer_list<const char*> vteps) {
    auto msg = fpm::make_bgp_route(*net::Ipv4Prefix::parse(prefix), {});
    for (const auto* v : vteps) msg.next_hops[msg.next_hop_count++].gateway = net::Ipv4Addr::parse(v)->value;
    table_.apply(msg);
    flush();
  }
  void withdraw(const char* prefix) {
    table_.apply(fpm::make_bgp_route(*net::Ipv4Prefix::parse(prefix), {}, /*is_delete=*/true));
    flush();
  }
  // zebra (re)connected and re-sent `resent`: the rest is swept, then the full table goes out.
  void resync(std::initializer_list<std::pair<const char*, const char*>> resent) {
    table_.begin_resync();
    for (const auto& [prefix, vtep] : resent) {
      auto msg = fpm::make_bgp_route(*net::Ipv4Prefix::parse(prefix), {net::Ipv4Addr::parse(vtep)->value});
      table_.apply(msg);
    }
    table_.end_resync();
    if (options_.on_routes) options_.on_routes(table_.take_full());
  }

  const AdapterOptions& options() const { return options_; }

  int starts = 0, stops = 0, reconfigures = 0, reresolves = 0, readvertises = 0, gbp_marks = 0;
  int failures_before_start = 0;
  bool started = false;

 private:
  void flush() {
    if (!table_.has_pending()) return;
    RouteUpdate u = table_.take_pending();
    if (!u.empty() && options_.on_routes) options_.on_routes(u);
  }

  AdapterOptions options_;
  RouteTable table_;
};

// A factory that keeps a pointer to the adapter it made, for the test to drive.
inline AdapterFactory fake_factory(FakeAdapter*& made) {
  return [&made](AdapterOptions options) -> Result<std::unique_ptr<AdapterInterface>> {
    auto adapter = std::make_unique<FakeAdapter>(std::move(options));
    made = adapter.get();
    return std::unique_ptr<AdapterInterface>(std::move(adapter));
  };
}

}  // namespace vxfed::bgp::testing
