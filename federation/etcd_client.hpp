// A client of etcd's v3 gRPC API (the subset in etcd_rpc.proto) implementing Kv: a list of
// member endpoints (each call goes to the member that answered last and moves on to the next
// one when a member is unreachable, does not answer within attempt_timeout_ms or has no
// quorum; reads and guarded writes keep the silent attempt running meanwhile), optional TLS with a client certificate, a key prefix under which every key lives,
// a deadline per call, and watch streams on their own thread. Each node's client starts from
// its own member (member_order: a rendezvous hash of the client's name). Blocking calls: each
// waits at most request_timeout_ms per member, less under a CallDeadline, and makes a single
// pass over the members once the store is known to be unavailable. Thread-safe: calls may
// come from several threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "federation/kv.hpp"

namespace vxfed::federation {

// What one call did, member by member (EtcdOptions::on_call): for a caller's log when a call was
// slow or failed.
struct CallTrace {
  struct Attempt {
    std::string member;        // host:port
    std::int64_t at_ms = 0;    // since the call began
    std::int64_t took_ms = 0;
    std::int64_t limit_ms = 0; // the attempt's deadline
    std::string outcome;       // "ok", or the gRPC code and message
    bool reachable = true;     // its channel was not in TRANSIENT_FAILURE afterwards
  };
  const char* what = "";
  bool ok = false;
  bool one_pass = false;       // the store was known to be down when the call began
  bool hedged = false;         // a silent member's attempt ran on while the next was asked
  std::int64_t took_ms = 0;
  std::int64_t budget_ms = 0;  // from the call's start to its end (CallDeadline, or per member x members)
  std::vector<Attempt> attempts;
  std::string str() const;     // one line: what, outcome, then each attempt
};

struct EtcdOptions {
  std::vector<std::string> endpoints;  // "host:port", "http://host:port" or "https://host:port"
  // TLS: on when ca_file is set or an endpoint says https://. cert_file/key_file (both or
  // neither): the client certificate etcd's --client-cert-auth asks for.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string key_prefix = "/vxfed";   // keys are key_prefix + "/" + relative key
  std::uint32_t request_timeout_ms = 2000;
  // One attempt on one member: a member silent this long (blackholed, cut off from the
  // leader) is left for the next one within the same call. Well under the call's budget, above
  // the slowest answer a healthy member gives (a write's fsync, the network's round trip).
  // Hedged calls (reads, guarded transactions: see EtcdClient) keep the silent attempt running
  // while the next member is asked, and the first good answer wins; the others are cut here.
  // 0: min(250 ms, request_timeout_ms).
  std::uint32_t attempt_timeout_ms = 0;
  std::uint32_t reconnect_max_ms = 1000;  // a member that came back is tried again within this
  // Who this client is (vxfedd: the node's name): picks the member it starts from, so that the
  // nodes spread over the members instead of all starting from the first one listed. Empty:
  // the members in the order listed.
  std::string client_name;
  // Called after every call (on the calling thread) with what it did; must not call the
  // client. Unset: nothing is recorded.
  std::function<void(const CallTrace&)> on_call;
};

// The order in which a client named `client_name` tries `addresses` (host:port), as indexes
// into `addresses`: by a rendezvous hash, each member's score a 64-bit hash of the name and the
// member's address, highest first. Stable across restarts and independent of the order the
// endpoints are listed in; adding or removing a member moves only the clients that had it
// first. Empty name: the order listed.
std::vector<std::size_t> member_order(const std::string& client_name, const std::vector<std::string>& addresses);

// Checks the options without touching the network (endpoints parse, TLS files readable).
StoreStatus validate(const EtcdOptions& options);

struct WatchEvent {
  enum class Type { put, erase };
  Type type = Type::put;
  KeyValue kv;                         // relative key; for erase the value is empty
};

class EtcdClient;

// A watch on every key under a prefix, delivering events on its own thread until destroyed.
// A broken stream is re-established (next member, after a short wait) from the revision after
// the last one delivered, so no event is lost or repeated; if that revision was compacted
// away, on_state reports it and the watch restarts from now (the caller re-reads the range).
class EtcdWatch {
 public:
  using OnEvents = std::function<void(const std::vector<WatchEvent>& events, std::int64_t revision)>;
  // connected: the stream is established (true) or broken (false, with the reason).
  using OnState = std::function<void(bool connected, const std::string& detail)>;
  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

 private:
  friend class EtcdClient;
  struct Shared;
  explicit EtcdWatch(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

// Bounds every EtcdClient call the current thread makes while it lives (nested ones: the
// earlier end wins): a caller that must answer in time (vxfedd's API) gets UNAVAILABLE by
// `end` instead of waiting through the election retries of each call.
class CallDeadline {
 public:
  explicit CallDeadline(std::chrono::steady_clock::time_point end);
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;
  // The current thread's end, if any.
  static std::optional<std::chrono::steady_clock::time_point> current();

 private:
  std::optional<std::chrono::steady_clock::time_point> previous_;
};

// Which calls are hedged (a second member asked while the first is silent, both attempts
// running; either may be applied): get/get_prefix, and a txn with a guard or without writes. A
// guarded write is safe to repeat when its guard compares what its writes change (every
// FederationStore transaction: absent(key) before creating the key, unchanged(key, revision)
// before changing or erasing it), so the repeat applied second finds the guard false. Not
// hedged, one attempt at a time: put, erase_prefix, an unguarded txn (a repeat arriving late
// would undo a later write), lease grant (each would grant a lease), revoke, keep-alive.
class EtcdClient final : public Kv {
 public:
  static StoreResult<std::unique_ptr<EtcdClient>> create(const EtcdOptions& options);
  ~EtcdClient() override;

  StoreResult<RangeResult> get(const std::string& key) override;
  StoreResult<RangeResult> get_prefix(const std::string& prefix) override;
  StoreResult<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                             const std::vector<Op>& failure) override;
  StoreResult<std::int64_t> lease_grant(std::int64_t ttl_s) override;
  StoreResult<std::int64_t> lease_keep_alive(std::int64_t id) override;
  StoreStatus lease_revoke(std::int64_t id) override;
  std::string describe() const override { return description_; }
  std::uint64_t cluster_id() const override { return cluster_id_.load(); }

  // Plain writes (a transaction without a guard would do; these are the etcd calls).
  StoreStatus put(const std::string& key, const std::string& value, std::int64_t lease = 0);
  StoreStatus erase_prefix(const std::string& prefix);

  // Events under `prefix` after `start_revision` (0: from now). Callbacks run on the watch's
  // thread: hand them to your own thread.
  std::unique_ptr<EtcdWatch> watch_prefix(const std::string& prefix, std::int64_t start_revision,
                                          EtcdWatch::OnEvents on_events, EtcdWatch::OnState on_state);

  const std::string& key_prefix() const { return prefix_; }
  // The last call found the store unavailable: the next one makes one pass over the members,
  // without the retries that ride out an election.
  bool known_down() const { return down_.load(); }
  // The member (host:port) the next call goes to first.
  std::string first_member() const;
  // How long a member that did not answer within attempt_timeout_ms is tried after the others.
  static constexpr std::chrono::seconds kSilentMemberLastFor{10};

 private:
  struct Members;
  EtcdClient(std::unique_ptr<Members> members, EtcdOptions options);
  // One call, member by member (etcd_client.cpp says how); `hedge`: a second member may be
  // asked while the first is silent (reads, and writes that are safe to repeat).
  template <typename Response, typename Start>
  StoreStatus call(const char* what, bool hedge, Response& out, Start&& start);
  // One Range RPC: the key alone (range_end empty) or every key in [key, range_end).
  StoreResult<RangeResult> range(const char* what, const std::string& key, const std::string& range_end);

  std::unique_ptr<Members> members_;
  EtcdOptions options_;
  std::string prefix_;       // key_prefix + "/"
  std::string description_;
  std::chrono::milliseconds attempt_timeout_;
  std::atomic<std::size_t> current_{0};  // index into members_->list, which is in member_order
  std::atomic<std::uint64_t> cluster_id_{0};
  std::atomic<bool> down_{false};
};

}  // namespace vxfed::federation
