// vxfedd publishes each network's compiled policy to its forwarder (docs/policy.md,
// "Publishing to the forwarder"): after every change the PolicyFeed made (a listing, the
// attached pods), each network's compiler's tables and the map of its pods' endpoints to their
// LocalIndex become one dp::NetworkPolicy (control/policy/policy_wire.hpp). An entry whose
// serialization equals the last one sent is not sent again; the others go to the sink as
// upserts, in one call. A network without any policy for it gets no entry (everything passes);
// one whose entry went (its policies deleted, its last pod here detached, its VNI changed) is
// a removal.
//
// Pure (no I/O; the clock only for the durations it reports), on the io thread with the feed:
// the follower calls update() right after the feed changed, so the compile and this
// conversion run where the compile already ran, and the sink gets finished protobufs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "control/policy/policy_feed.hpp"
#include "control/policy/policy_wire.hpp"

namespace vxfed::control {

struct Config;

class PolicyPublisher {
 public:
  using Clock = std::chrono::steady_clock;
  // Where the changed entries go (vxfedd: NodeState::set_policies, one Delta).
  // `complete`: the first call after start, whose upserts are every entry there is (what the
  // sink held from before the start, its cache, and is not among them goes).
  using Sink = std::function<void(const std::vector<dp::NetworkPolicy>& upserts, const std::vector<std::uint32_t>& removals,
                                  bool complete)>;

  // What is in force per network, as last sent.
  struct Published {
    std::uint32_t vni = 0;
    std::size_t bytes = 0;           // the entry's serialized size
    std::size_t hash = 0;            // of its serialization
    std::size_t local_tables = 0;    // local identities (ingress and egress table each)
    std::size_t endpoints = 0;       // pods mapped to them
    std::size_t remote_egress = 0;   // remote-egress groups
    std::uint64_t generation = 0;    // upserts of this network's entry sent since start
  };

  struct Stats {
    std::uint64_t upserts = 0;              // entries sent
    std::uint64_t removals = 0;
    std::uint64_t unchanged = 0;            // entries built and found equal to the last sent
    std::size_t last_bytes = 0;             // of the last entry sent
    // The store change (the watch event that led to the listing) -> its entries handed to the
    // sink; only for publications a store change caused.
    std::chrono::nanoseconds last_latency{0}, max_latency{0};
    std::uint64_t latency_samples = 0;
    std::chrono::nanoseconds last_build{0}, max_build{0};  // building and comparing the entries
  };

  // `clusters`: the clusters' CIDRs for the GBP trust check (add_identity_clusters); empty:
  // entries carry no clusters and the forwarder does not check identities.
  explicit PolicyPublisher(Sink sink, ClusterCidrs clusters = {}) : sink_(std::move(sink)), clusters_(std::move(clusters)) {}

  // Brings what was sent to the feed's compilers and `pods` (the pods the feed was last given).
  // `change_seen`: when the store change behind this update was seen, if one was.
  void update(const PolicyFeed& feed, const std::vector<LocalPod>& pods, std::optional<Clock::time_point> change_seen);

  const std::map<std::string, Published>& published() const { return published_; }  // by network
  const Stats& stats() const { return stats_; }

 private:
  Sink sink_;
  ClusterCidrs clusters_;
  bool first_ = true;
  std::map<std::string, Published> published_;
  Stats stats_;
};

// The clusters whose pod CIDRs `config` names: its own (cluster.pod_cidrs) and bgp.clusters.
ClusterCidrs cluster_cidrs_of(const Config& config);

// The LocalIndex of `pod` in its network's compiler: the local identity with its number (the
// unlabelled one of its namespace when that number is 1), as PolicyFeed made the locals.
std::optional<std::uint32_t> local_index_of(const PolicyFeed& feed, const policy::PolicyCompiler& compiler,
                                            const LocalPod& pod);

}  // namespace vxfed::control
