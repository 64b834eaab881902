// The table changes on their way to the dataplane, in the order vxfedd made them. The
// dataplane applies a Delta in place, in time proportional to its entries (microseconds per
// entry), so changes are not held back to be merged: each TablesDelta is queued as it
// happens and sent as soon as the pipeline window allows (control/node/dataplane_client.hpp).
//
// Bounded per message: a TablesDelta becomes one or more wire Deltas of at most
// `max_entries` entries each (a federation's 130,000-route burst is ~32 messages of 4,096, not
// one 3 MB message that holds the dataplane's control thread for the whole burst). The pieces
// keep the order one Delta applies its parts in — networks, endpoints, routes, services, VTEPs,
// network policies upserted, then removed in that order — so applying them one after another means
// what the whole TablesDelta meant. A packet may see the tables between two pieces: each
// piece is itself a Delta the dataplane would accept alone (a route's network comes in an
// earlier or the same piece), so such a state is one vxfedd could have sent as it is.
//
// A piece that upserts an endpoint is marked: the dataplane may refuse one endpoint of it
// (its interface is gone, no pod port is free), and the client sends such a piece with
// nothing else in flight, so that nothing queued behind it rests on an endpoint the
// dataplane does not have.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>

#include "control/node/tables_delta.hpp"

namespace vxfed::control {

class DeltaQueue {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  static constexpr std::size_t kDefaultMaxEntries = 4096;

  struct Item {
    dp::Delta delta;               // its generation is set when it is sent
    std::size_t entries = 0;       // upserts + removals it carries
    bool upserts_endpoints = false;
    TimePoint queued;              // when the change was published
  };

  explicit DeltaQueue(std::size_t max_entries = kDefaultMaxEntries) : max_entries_(max_entries ? max_entries : 1) {}

  // Queues `delta` as one or more Items (none for an empty delta).
  void push(const TablesDelta& delta, TimePoint now);
  // A refused delta's remainder goes first again: it was older than everything queued.
  void push_front(Item item) { items_.push_front(std::move(item)); }
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  const Item& front() const { return items_.front(); }
  Item pop_front();
  void clear() { items_.clear(); }

  // Some queued item upserts this endpoint.
  bool upserts_endpoint(const std::string& id) const;
  // The dataplane refused this endpoint: queued removals of it are dropped (the dataplane
  // never had it), up to a queued upsert of it (an attach made after the refused one, whose
  // removal must still be sent).
  void drop_endpoint_removals(const std::string& id);

 private:
  std::size_t max_entries_;
  std::deque<Item> items_;
};

}  // namespace vxfed::control
