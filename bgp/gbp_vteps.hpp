// Which remote VTEPs take VXLAN-GBP, from the GBP mark on the routes that name them (pure logic,
// no I/O). vxfedd tells its forwarder with `Vtep{ip, gbp: true}` (proto/dataplane.proto).
//
// The rule: a VTEP takes GBP when every route naming it carries the mark (RemoteRoute::gbp_mark)
// and at least one does. One route without it is enough to keep the VTEP on plain VXLAN: a
// route of the previous release's node (it sets no mark), one learned over FPM (no
// communities), a static route from the operator's config. Plain VXLAN is what every receiver
// takes; GBP toward a receiver that does not take it loses every packet (docs/policy.md,
// "VXLAN-GBP on the wire"), so the doubt goes to plain.
//
// The owner reports each change of a route it holds (before -> after, nullptr for none) and
// takes the VTEPs whose answer changed since the last take, as the consumer must see them.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/routes.hpp"

namespace vxfed::bgp {

class GbpVteps {
 public:
  // A route the owner holds changed: `before` was held (nullptr: none), `after` is now (nullptr:
  // none). Both may name the same VTEPs.
  void route_changed(const RemoteRoute* before, const RemoteRoute* after);
  // Every route is replaced: forget what the routes said (what was taken stays known, so the
  // next take reports the VTEPs to clear).
  void clear_routes();

  bool takes_gbp(net::Ipv4Addr vtep) const;
  // Every VTEP that takes GBP now, sorted (a snapshot's `vteps`).
  std::vector<net::Ipv4Addr> gbp_vteps() const;

  struct Changes {
    std::vector<net::Ipv4Addr> now_gbp;    // upsert Vtep{ip, gbp: true}
    std::vector<net::Ipv4Addr> no_longer;  // remove the explicit Vtep entry
    bool empty() const { return now_gbp.empty() && no_longer.empty(); }
  };
  // What changed since the last take (or since construction), each sorted. A VTEP that went
  // and came back in between is not reported.
  Changes take_changes();
  // The consumer got a complete table built from gbp_vteps() (a snapshot): nothing is pending.
  void mark_all_taken();

  std::size_t size() const { return gbp_count_; }

 private:
  struct Count {
    std::uint32_t routes = 0;   // routes naming the VTEP
    std::uint32_t marked = 0;   // of which carry the mark
    bool taken = false;         // the consumer holds it as GBP
    bool touched = false;       // in touched_
    bool gbp() const { return routes != 0 && marked == routes; }
  };
  void add(const RemoteRoute& route, int sign);
  Count& touch(net::Ipv4Addr vtep);

  std::unordered_map<std::uint32_t, Count> counts_;
  std::vector<std::uint32_t> touched_;
  std::size_t gbp_count_ = 0;  // VTEPs for which gbp() holds
};

}  // namespace vxfed::bgp
