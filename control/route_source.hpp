// The seam between vxfedd and whatever learns remote routes (the BGP adapter in bgp/, static
// routes from the config, a test). A source delivers its routes as updates: either its full
// table (replacing everything it said before) or a delta. vxfedd merges the sources per
// (VNI, prefix), static first, pushes the result to the dataplane and serves it to
// `vxfedctl routes`; `vxfedctl peers` reads peers() of the sources.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "proto/control.pb.h"
#include "common/result.hpp"

namespace vxfed::control {

struct Config;

struct LearnedRoute {
  std::uint32_t vni = 0;             // the network's VNI
  std::string network;               // may be empty: found from the VNI
  std::string prefix;                // "10.245.0.0/16"
  std::vector<std::string> vteps;    // ECMP next hops
  std::string peer;                  // who advertised it ("" for static)
};

struct RouteRemoval {
  std::uint32_t vni = 0;
  std::string prefix;
};

struct RouteUpdate {
  bool full = false;                 // upserts are the source's complete table
  std::vector<LearnedRoute> upserts;
  std::vector<RouteRemoval> removals;
};

class RouteSource {
 public:
  // Called on the daemon's io_context thread with the source's name and an update.
  using Sink = std::function<void(const std::string& source, const RouteUpdate& update)>;

  virtual ~RouteSource() = default;
  virtual std::string name() const = 0;                          // "bgp", "static"
  virtual Status start(Sink sink) = 0;                           // sends a full update first
  virtual void stop() {}
  virtual std::vector<v1::PeerInfo> peers() const { return {}; }  // for `vxfedctl peers`
  virtual bool connected() const { return false; }               // e.g. FPM stream up
  virtual void networks_changed() {}                             // network VNIs changed
  virtual Status reconfigure(const Config& /*config*/) { return {}; }  // SIGHUP
};

}  // namespace vxfed::control
