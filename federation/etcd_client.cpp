#include "federation/etcd_client.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "common/read_file.hpp"
#include "federation/etcd_rpc.grpc.pb.h"

namespace vxfed::federation {

namespace pb = ::etcdserverpb;

const char* code_name(Code code) {
  switch (code) {
    case Code::unavailable: return "UNAVAILABLE";
    case Code::conflict: return "CONFLICT";
    case Code::exhausted: return "EXHAUSTED";
    case Code::invalid: return "INVALID_ARGUMENT";
    case Code::not_found: return "NOT_FOUND";
    case Code::internal: return "INTERNAL";
  }
  return "?";
}

std::string prefix_range_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

namespace {

struct Endpoint {
  std::string address;  // host:port
  bool https = false;
};

StoreResult<Endpoint> parse_endpoint(const std::string& text) {
  Endpoint e;
  std::string rest = text;
  if (rest.rfind("https://", 0) == 0) {
    e.https = true;
    rest = rest.substr(8);
  } else if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto colon = rest.rfind(':');
  if (rest.empty() || colon == std::string::npos || colon == 0 || colon + 1 == rest.size() ||
      rest.find('/') != std::string::npos)
    return store_error(Code::invalid, "etcd endpoint '" + text + "' is not HOST:PORT (optionally with http:// or https://)");
  int port = 0;
  try {
    port = std::stoi(rest.substr(colon + 1));
  } catch (...) {
  }
  if (port <= 0 || port > 65535 || std::to_string(port) != rest.substr(colon + 1))
    return store_error(Code::invalid, "etcd endpoint '" + text + "': port must be 1..65535");
  e.address = rest;
  return e;
}

StoreResult<std::string> read_pem(const std::string& path, const char* what) {
  auto text = read_file(path);
  if (!text)
    return store_error(Code::invalid, std::string(what) + " '" + path + "' cannot be read (" + text.error().reason + ")");
  if (text->find("-----BEGIN") == std::string::npos)
    return store_error(Code::invalid, std::string(what) + " '" + path + "' is not PEM");
  return std::move(text).value();
}

bool retryable(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:         // refused, no leader, leader changed, request timed out
    case grpc::StatusCode::DEADLINE_EXCEEDED:   // no answer in time (no quorum, partition)
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:  // too many requests
    case grpc::StatusCode::UNKNOWN:             // a member going away mid-call
      return true;
    default:
      return false;
  }
}

Code code_of(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::NOT_FOUND: return Code::not_found;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::OUT_OF_RANGE: return Code::invalid;
    default: return retryable(status) ? Code::unavailable : Code::internal;
  }
}

std::string status_text(const grpc::Status& status) {
  std::string text = status.error_message();
  if (text.empty()) text = "gRPC status " + std::to_string(static_cast<int>(status.error_code()));
  return text;
}

}  // namespace

struct EtcdClient::Members {
  struct Member {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pb::KV::Stub> kv;
    std::unique_ptr<pb::Lease::Stub> lease;
    std::unique_ptr<pb::Watch::Stub> watch;
  };
  std::vector<Member> list;  // in member_order of the client's name
  // Per member: until when (steady clock, ns) it is tried after the others, because an attempt
  // on it just went unanswered. 0: not silent.
  std::unique_ptr<std::atomic<std::int64_t>[]> silent_until;
};

namespace {

// FNV-1a, then splitmix64's finalizer: FNV alone spreads the last bytes of similar strings
// (node-a1, node-a2 ... on 10.0.0.1:2379 ...) poorly over the high bits a comparison looks at.
std::uint64_t score(const std::string& name, const std::string& address) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 0x100000001b3ull;
  };
  for (unsigned char c : name) mix(c);
  mix(0);
  for (unsigned char c : address) mix(c);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace

std::vector<std::size_t> member_order(const std::string& client_name, const std::vector<std::string>& addresses) {
  std::vector<std::size_t> order(addresses.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (client_name.empty()) return order;
  std::vector<std::uint64_t> scores;
  for (const auto& a : addresses) scores.push_back(score(client_name, a));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return addresses[a] < addresses[b];
  });
  return order;
}

StoreStatus validate(const EtcdOptions& options) {
  if (options.endpoints.empty()) return store_error(Code::invalid, "no etcd endpoints are configured");
  bool https = false;
  for (const auto& text : options.endpoints) {
    auto e = parse_endpoint(text);
    if (!e) return e.store_error();
    https = https || e->https;
  }
  if (options.cert_file.empty() != options.key_file.empty())
    return store_error(Code::invalid, "a TLS client certificate needs both cert_file and key_file");
  if (!options.cert_file.empty() && options.ca_file.empty() && !https)
    return store_error(Code::invalid, "a TLS client certificate needs TLS: set ca_file or use https:// endpoints");
  for (const auto& [path, what] : {std::pair{options.ca_file, "TLS CA file"}, {options.cert_file, "TLS certificate"},
                                   {options.key_file, "TLS key"}}) {
    if (path.empty()) continue;
    if (auto pem = read_pem(path, what); !pem) return pem.store_error();
  }
  if (options.key_prefix.empty() || options.key_prefix.front() != '/' || options.key_prefix.back() == '/')
    return store_error(Code::invalid, "key prefix '" + options.key_prefix + "' must start with '/' and not end with one");
  if (options.request_timeout_ms == 0) return store_error(Code::invalid, "request timeout must be above 0 ms");
  return Done{};
}

StoreResult<std::unique_ptr<EtcdClient>> EtcdClient::create(const EtcdOptions& options) {
  if (auto ok = validate(options); !ok) return ok.store_error();
  // Between calls nothing polls gRPC's sockets and timers but its "backup poller", every 5 s
  // by default: a reconnect (backoff timer, TCP connect, HTTP/2 handshake) would take many
  // times that and hit its own deadline. Every 100 ms keeps reconnects prompt for a few
  // wake-ups a second. Read once, when gRPC starts: before the first channel. An operator's
  // own setting wins.
  ::setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "100", /*overwrite=*/0);
  auto members = std::make_unique<Members>();
  bool tls = !options.ca_file.empty();
  std::vector<Endpoint> endpoints;
  for (const auto& text : options.endpoints) {
    endpoints.push_back(*parse_endpoint(text));
    tls = tls || endpoints.back().https;
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.ca_file.empty()) ssl.pem_root_certs = *read_pem(options.ca_file, "TLS CA file");
    if (!options.cert_file.empty()) {
      ssl.pem_cert_chain = *read_pem(options.cert_file, "TLS certificate");
      ssl.pem_private_key = *read_pem(options.key_file, "TLS key");
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  // A member that comes back is used again within reconnect_max_ms (gRPC's default backoff
  // grows to two minutes). GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is left alone: gRPC also takes it
  // as the deadline of one connection attempt (20 s by default), and a short one makes every
  // attempt on a loaded machine end before the HTTP/2 handshake ("tcp handshaker shutdown").
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(std::max<std::uint32_t>(options.reconnect_max_ms, 100)));
  // Notices a silently dead connection (a watch stream would otherwise wait forever); etcd
  // refuses pings more often than every 5 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  std::vector<std::string> addresses;
  for (const auto& e : endpoints) addresses.push_back(e.address);
  for (const std::size_t i : member_order(options.client_name, addresses)) {
    const Endpoint& e = endpoints[i];
    Members::Member m;
    m.address = e.address;
    m.channel = grpc::CreateCustomChannel(e.address, credentials, args);
    m.kv = pb::KV::NewStub(m.channel);
    m.lease = pb::Lease::NewStub(m.channel);
    m.watch = pb::Watch::NewStub(m.channel);
    members->list.push_back(std::move(m));
  }
  members->silent_until = std::make_unique<std::atomic<std::int64_t>[]>(members->list.size());
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(members), options));
}

EtcdClient::EtcdClient(std::unique_ptr<Members> members, EtcdOptions options)
    : members_(std::move(members)), options_(std::move(options)) {
  prefix_ = options_.key_prefix + "/";
  attempt_timeout_ = std::chrono::milliseconds(
      std::min(options_.attempt_timeout_ms ? options_.attempt_timeout_ms : 250u, options_.request_timeout_ms));
  // Errors name the members as the operator listed them, not in this client's order.
  std::string list;
  for (const auto& text : options_.endpoints) list += (list.empty() ? "" : ",") + parse_endpoint(text)->address;
  description_ = "etcd at " + list + " (key prefix " + options_.key_prefix + ")";
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::first_member() const { return members_->list[current_.load()].address; }

namespace {
thread_local std::optional<std::chrono::steady_clock::time_point> t_call_deadline;
}  // namespace

CallDeadline::CallDeadline(std::chrono::steady_clock::time_point end) : previous_(t_call_deadline) {
  t_call_deadline = previous_ ? std::min(*previous_, end) : end;
}

CallDeadline::~CallDeadline() { t_call_deadline = previous_; }

std::optional<std::chrono::steady_clock::time_point> CallDeadline::current() { return t_call_deadline; }

// Runs one RPC against the member that answered last, moving on through the others while the
// failure says "this member cannot serve now". A pass where every member is unreachable (its
// channel cannot connect) fails at once: the store is down. A pass where some member answered
// but could not serve (no leader, leader changed, no answer in time: an election after the
// leader died, or a member cut off from the quorum) is tried again after a short pause, within
// a budget of request_timeout_ms per member, so an election does not fail the call.
//
// A silent member (packets dropped, not refused: a blackholed host, a member cut off from the
// leader) must not spend the call's budget: after attempt_timeout_ without an answer the next
// member is asked within the same call. A member that went unanswered is tried after the
// others for kSilentMemberLastFor, by every call of this client, and later passes of the same
// call leave it out while another member is still in play (answered, but could not serve);
// when no member answered (the leader cut off or killed: the followers wait for it until they
// elect another, and a killed member's refused connection is no answer), every silent one is
// tried again, each pass starting one further on.
//
// Hedged calls (`hedge`: reads, and writes safe to repeat, see EtcdClient) do not give up on
// the silent attempt: it keeps running until the call's end while the next member is asked,
// and the first good answer wins (the others are cancelled). A request a member holds through
// an election (a write forwarded to the leader that was cut off is lost, and the member
// answers it only at etcd's own request timeout) then no longer holds the call: an attempt
// asked after the new leader is there answers. Calls that are not hedged (plain puts and
// deletes, lease grants and revokes, keep-alives) run one attempt at a time, each of at most
// attempt_timeout_, doubled after a pass without any reply (a member waiting out an election
// holds a request until etcd's own ReadIndex retry, every 500 ms, finds the new leader).
//
// Two things keep a store without quorum from holding callers for that whole budget:
// - every request carries etcd's `hasleader: true` metadata, so a member that has no leader
//   refuses at once ("etcdserver: no leader") instead of waiting for a quorum read to time out;
// - once a call has found the store unavailable, the next ones make a single pass (a store
//   that stays down is not waited for again and again; a pass that succeeds ends it), and a
//   CallDeadline on the calling thread caps the whole call.
// `start(member, context, response, done)` starts one attempt and calls done(status) once when
// it ends (it may do so before it returns: then the call is not hedged); on success the
// winning attempt's response is moved into `out`.
template <typename Response, typename Start>
StoreStatus EtcdClient::call(const char* what, bool hedge, Response& out, Start&& start) {
  using Clock = std::chrono::steady_clock;
  const std::size_t n = members_->list.size();
  const auto per_member = std::chrono::milliseconds(options_.request_timeout_ms);
  const auto since_epoch = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  const auto began = Clock::now();
  Clock::time_point end = began + std::chrono::duration_cast<Clock::duration>(per_member * static_cast<std::int64_t>(n));
  if (const auto limit = CallDeadline::current(); limit && *limit < end) end = *limit;
  const bool one_pass = down_.load();
  const auto ms = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  std::optional<CallTrace> trace;
  if (options_.on_call) {
    trace.emplace();
    trace->what = what;
    trace->one_pass = one_pass;
    trace->hedged = hedge;
    trace->budget_ms = ms(end - began);
  }

  // The attempts of this call; each lives until its callback has run (drain()).
  struct Attempt {
    std::size_t index = 0;
    Clock::time_point started;
    Clock::duration limit{};
    grpc::ClientContext context;
    Response response;
    grpc::Status status;
    bool done = false;     // its callback ran (under Sync::mutex)
    bool handled = false;  // its outcome was taken into account
    bool silent = false;   // unanswered past the hedge delay (hedged calls)
  };
  struct Sync {
    std::mutex mutex;
    std::condition_variable cv;
  };
  auto sync = std::make_shared<Sync>();
  std::vector<std::unique_ptr<Attempt>> attempts;
  const auto launch = [&](std::size_t index, Clock::duration limit) {
    auto a = std::make_unique<Attempt>();
    a->index = index;
    a->started = Clock::now();
    a->limit = limit;
    a->context.AddMetadata("hasleader", "true");
    a->context.set_deadline(std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::milliseconds>(limit));
    Attempt* p = a.get();
    attempts.push_back(std::move(a));
    start(members_->list[index], p->context, &p->response, [sync, p](grpc::Status status) {
      std::lock_guard lock(sync->mutex);
      p->status = std::move(status);
      p->done = true;
      sync->cv.notify_all();
    });
  };
  const auto record = [&](const Attempt& a, const std::string& outcome, bool reachable) {
    if (trace)
      trace->attempts.push_back(CallTrace::Attempt{members_->list[a.index].address, ms(a.started - began),
                                                   ms(Clock::now() - a.started), ms(a.limit), outcome, reachable});
  };
  // Cancels what still runs and waits for every callback (they use the attempts and the
  // caller's request).
  const auto drain = [&](const char* why) {
    std::vector<Attempt*> running;
    {
      std::lock_guard lock(sync->mutex);
      for (auto& a : attempts)
        if (!a->handled) {  // still running, or ended alongside the one that decided
          record(*a, why, true);
          if (!a->done) running.push_back(a.get());
        }
    }
    for (auto* a : running) a->context.TryCancel();
    std::unique_lock lock(sync->mutex);
    sync->cv.wait(lock, [&] { return std::all_of(attempts.begin(), attempts.end(), [](const auto& a) { return a->done; }); });
  };
  const auto finish = [&](StoreStatus status) {
    if (trace) {
      trace->ok = static_cast<bool>(status);
      trace->took_ms = ms(Clock::now() - began);
      options_.on_call(*trace);
    }
    return status;
  };

  std::size_t start_at = current_.load();
  std::vector<bool> unanswered(n, false);  // went unanswered in this call
  // Answered in this call, though it could not serve ("no leader", ...): a member in play. A
  // member whose connection is refused (dead, not silent) is not: while only such members and
  // silent ones are left, the silent ones are the call's only hope and are asked again.
  std::vector<bool> replied(n, false);
  std::vector<std::string> reasons(n);      // each member's latest failure in this call
  // A single pass (the store was found away) gives each member the whole budget: a member that
  // is there but silent is most likely waiting out an election (the store just lost its
  // leader), and this pass is the call's only chance to see it end.
  auto attempt_limit = one_pass ? std::chrono::duration_cast<Clock::duration>(per_member)
                                : std::chrono::duration_cast<Clock::duration>(attempt_timeout_);
  const auto hedge_after = std::chrono::duration_cast<Clock::duration>(attempt_timeout_);
  // Hedged attempts in flight at once: enough for every member to hold one through an
  // election and a few more asked after it; a bound, not a pace (the pace is hedge_after).
  const std::size_t max_in_flight = hedge ? 4 * n : 1;
  int silent_passes = 0;  // passes in a row where every attempt went unanswered
  std::vector<std::size_t> order;
  std::size_t pos = 0;
  Clock::time_point pass_started;
  bool pass_all_silent = true;  // no member replied in this pass (a refused connection is no reply)
  bool pass_answered = false;   // some member is reachable but could not serve
  bool launching = true;        // further attempts may be started
  Clock::time_point next_launch = began;
  // This pass's order: from `start_at` round the list, the members in play (replied) first,
  // then those not recently silent, the silent ones last.
  const auto new_pass = [&] {
    pass_started = Clock::now();
    pass_all_silent = true;
    pass_answered = false;
    order.clear();
    pos = 0;
    const auto tier = [&](std::size_t index) {
      if (replied[index]) return 0;
      return members_->silent_until[index].load() > since_epoch(pass_started) ? 2 : 1;
    };
    for (int t = 0; t < 3; ++t)
      for (std::size_t i = 0; i < n; ++i)
        if (tier((start_at + i) % n) == t) order.push_back((start_at + i) % n);
  };
  const auto mark_silent = [&](std::size_t index, Clock::duration waited) {
    unanswered[index] = true;
    members_->silent_until[index].store(since_epoch(Clock::now() + kSilentMemberLastFor));
    reasons[index] = "no answer within " + std::to_string(ms(waited)) + " ms";
  };
  new_pass();

  for (;;) {
    // 1. The attempts that ended.
    std::vector<Attempt*> ended;
    {
      std::lock_guard lock(sync->mutex);
      for (auto& a : attempts)
        if (a->done && !a->handled) ended.push_back(a.get());
    }
    for (Attempt* a : ended) {
      a->handled = true;
      auto& member = members_->list[a->index];
      const grpc::Status& status = a->status;
      // A reply ("no leader", "leader changed") leaves the connection up; a killed member's
      // does not: refused (TRANSIENT_FAILURE), or, for the RPC that was on its way when it
      // died, "Socket closed" with the channel gone IDLE. That one is no reply either (it
      // counted as one, and the silent members waiting out the election were left out: the
      // call failed in 0.5 s, faults_federated's etcd_member_kills under load).
      // A silent member (no answer in time) is still there unless its connection is refused:
      // it may be waiting out an election, or not have started HTTP/2 yet.
      const auto state = member.channel->GetState(false);
      const bool reachable = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                                 ? state != GRPC_CHANNEL_TRANSIENT_FAILURE
                                 : state == GRPC_CHANNEL_READY;
      record(*a, status.ok() ? "ok" : std::to_string(static_cast<int>(status.error_code())) + " " + status_text(status),
             reachable);
      if (status.ok()) {
        current_.store(a->index);
        members_->silent_until[a->index].store(0);
        down_.store(false);
        out = std::move(a->response);
        drain("abandoned: another attempt answered");
        return finish(Done{});
      }
      if (!retryable(status)) {
        down_.store(false);  // a member answered: the store is there, the request is wrong
        drain("abandoned: another attempt failed for good");
        return finish(store_error(code_of(status), "federation store " + description_ + ": " + what + " on " +
                                                       member.address + " failed: " + status_text(status)));
      }
      replied[a->index] = false;  // in play only while its latest attempt got a reply
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        mark_silent(a->index, a->limit);
      } else {
        reasons[a->index] = status_text(status);
        if (reachable) {
          // In play, even if an earlier attempt of it went unanswered: a follower that held a
          // request through the election and then says "no leader" is the one to ask next
          // (left out as unanswered, with only the killed leader's refusal left, the call
          // failed in 0.6-1.05 s after the leader's kill: faults_federated under load).
          replied[a->index] = true;
          unanswered[a->index] = false;
          pass_all_silent = false;
        }
      }
      pass_answered = pass_answered || reachable;
      next_launch = std::min(next_launch, Clock::now());  // a failure: the next member now
    }
    // 2. Hedged attempts unanswered past the hedge delay: their members are silent, the next
    // one is asked (the attempt keeps running).
    auto now = Clock::now();
    std::size_t in_flight = 0;
    for (auto& a : attempts) {
      if (a->handled) continue;
      ++in_flight;
      if (hedge && !a->silent && now - a->started >= hedge_after) {
        a->silent = true;
        mark_silent(a->index, now - a->started);
        reasons[a->index] += " (still asked)";
        pass_answered = pass_answered || members_->list[a->index].channel->GetState(false) != GRPC_CHANNEL_TRANSIENT_FAILURE;
      }
    }
    if (now + std::chrono::milliseconds(1) >= end) break;
    // 3. The next attempt.
    if (launching && in_flight < max_in_flight && now >= next_launch) {
      // Asked when it comes to its turn: the members in play are tried first in a pass (the
      // silent ones last), so one that replied last pass and is gone now (killed since) no
      // longer keeps the silent ones out.
      const bool someone_replies = std::find(replied.begin(), replied.end(), true) != replied.end();
      while (pos < order.size() && unanswered[order[pos]] && !replied[order[pos]] && someone_replies) ++pos;  // their reasons stay
      if (pos < order.size()) {
        const std::size_t index = order[pos++];
        launch(index, hedge ? end - now : std::min<Clock::duration>(attempt_limit, end - now));
        next_launch = hedge ? now + hedge_after : now;
        continue;
      }
      // The pass is over.
      start_at = (start_at + 1) % n;
      current_.store(start_at);
      // A pass without a single reply is not one silent member: the members may all be
      // slower than attempt_timeout_ (a far etcd, a loaded one, one in an election). Each
      // further pass gives an attempt that is not hedged twice as long, so that a store that
      // is slow but there still serves within the call's budget (a hedged one runs to the end).
      silent_passes = pass_all_silent ? silent_passes + 1 : 0;
      if (silent_passes >= 1) attempt_limit = std::min<Clock::duration>(attempt_limit * 2, per_member);
      if (one_pass || !pass_answered || now + std::chrono::milliseconds(100) >= end) {
        launching = false;  // what runs may still answer
      } else {
        // A pass that waited out silent members has paused already; one of quick refusals
        // (an election under way) waits a little before asking again.
        next_launch = std::max(now, pass_started + std::chrono::milliseconds(100));
        new_pass();
        continue;
      }
    }
    if (!launching && in_flight == 0) break;
    // 4. Wait for an attempt to end, the next launch or the next hedge.
    auto wake = end;
    if (launching && in_flight < max_in_flight) wake = std::min(wake, next_launch);
    if (hedge)
      for (auto& a : attempts)
        if (!a->handled && !a->silent) wake = std::min(wake, a->started + hedge_after);
    std::unique_lock lock(sync->mutex);
    sync->cv.wait_until(lock, wake, [&] {
      return std::any_of(attempts.begin(), attempts.end(), [](const auto& a) { return a->done && !a->handled; });
    });
  }
  drain("cancelled: the call's time was up");
  down_.store(true);
  std::string failures;
  for (std::size_t i = 0; i < n; ++i)
    failures += (failures.empty() ? "" : "; ") + members_->list[i].address + ": " +
                (reasons[i].empty() ? std::string("not tried, the call's time was up") : reasons[i]);
  return finish(
      store_error(Code::unavailable, "federation store " + description_ + " is unavailable (" + what + "): " + failures));
}

std::string CallTrace::str() const {
  std::string out = std::string(what) + (ok ? " ok" : " failed") + " in " + std::to_string(took_ms) + " ms of " +
                    std::to_string(budget_ms) + (one_pass ? " (one pass)" : "") + (hedged ? " (hedged)" : "") + ":";
  for (const auto& a : attempts)
    out += " [+" + std::to_string(a.at_ms) + " " + a.member + " " + std::to_string(a.took_ms) + "/" +
           std::to_string(a.limit_ms) + " ms " + a.outcome + (a.reachable ? "" : " (unreachable)") + "]";
  return out;
}

namespace {

KeyValue from_pb(const pb::KeyValue& kv, const std::string& prefix) {
  KeyValue out;
  out.key = kv.key().rfind(prefix, 0) == 0 ? kv.key().substr(prefix.size()) : kv.key();
  out.value = kv.value();
  out.create_revision = kv.create_revision();
  out.mod_revision = kv.mod_revision();
  out.version = kv.version();
  out.lease = kv.lease();
  return out;
}

}  // namespace

StoreResult<RangeResult> EtcdClient::range(const char* what, const std::string& key, const std::string& range_end) {
  pb::RangeRequest request;
  request.set_key(key);
  if (!range_end.empty()) request.set_range_end(range_end);
  pb::RangeResponse response;
  auto ok = call(what, /*hedge=*/true, response, [&](Members::Member& m, grpc::ClientContext& c, pb::RangeResponse* r, auto done) {
    m.kv->async()->Range(&c, &request, r, std::move(done));
  });
  if (!ok) return ok.store_error();
  cluster_id_.store(response.header().cluster_id());
  RangeResult out;
  out.revision = response.header().revision();
  for (const auto& kv : response.kvs()) out.kvs.push_back(from_pb(kv, prefix_));
  return out;
}

StoreResult<RangeResult> EtcdClient::get(const std::string& key) { return range("get", prefix_ + key, ""); }

StoreResult<RangeResult> EtcdClient::get_prefix(const std::string& prefix) {
  return range("range", prefix_ + prefix, prefix_range_end(prefix_ + prefix));
}

StoreResult<TxnResult> EtcdClient::txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                                       const std::vector<Op>& failure) {
  pb::TxnRequest request;
  for (const auto& c : compares) {
    auto* out = request.add_compare();
    out->set_key(prefix_ + c.key);
    if (c.prefix) out->set_range_end(prefix_range_end(prefix_ + c.key));
    switch (c.relation) {
      case Compare::Relation::equal: out->set_result(pb::Compare::EQUAL); break;
      case Compare::Relation::not_equal: out->set_result(pb::Compare::NOT_EQUAL); break;
      case Compare::Relation::greater: out->set_result(pb::Compare::GREATER); break;
      case Compare::Relation::less: out->set_result(pb::Compare::LESS); break;
    }
    switch (c.target) {
      case Compare::Target::version: out->set_target(pb::Compare::VERSION); out->set_version(c.number); break;
      case Compare::Target::create_revision: out->set_target(pb::Compare::CREATE); out->set_create_revision(c.number); break;
      case Compare::Target::mod_revision: out->set_target(pb::Compare::MOD); out->set_mod_revision(c.number); break;
      case Compare::Target::value: out->set_target(pb::Compare::VALUE); out->set_value(c.value); break;
    }
  }
  auto add_ops = [&](const std::vector<Op>& ops, auto add) {
    for (const auto& op : ops) {
      pb::RequestOp* out = add();
      const std::string key = prefix_ + op.key;
      switch (op.kind) {
        case Op::Kind::put: {
          auto* put = out->mutable_request_put();
          put->set_key(key);
          put->set_value(op.value);
          put->set_lease(op.lease);
          break;
        }
        case Op::Kind::erase: {
          auto* erase = out->mutable_request_delete_range();
          erase->set_key(key);
          if (op.prefix) erase->set_range_end(prefix_range_end(key));
          break;
        }
        case Op::Kind::get: {
          auto* range = out->mutable_request_range();
          range->set_key(key);
          if (op.prefix) range->set_range_end(prefix_range_end(key));
          break;
        }
      }
    }
  };
  add_ops(success, [&] { return request.add_success(); });
  add_ops(failure, [&] { return request.add_failure(); });
  // Hedged (asked of a second member while the first is silent, both may apply it) when it is
  // safe to repeat: guarded (a repeat finds its guard false once the first applied: the
  // store's guards compare the keys their writes change), or only reads.
  const auto writes = [](const std::vector<Op>& ops) {
    return std::any_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind != Op::Kind::get; });
  };
  const bool hedge = !compares.empty() || (!writes(success) && !writes(failure));
  pb::TxnResponse response;
  auto ok = call("transaction", hedge, response, [&](Members::Member& m, grpc::ClientContext& c, pb::TxnResponse* r, auto done) {
    m.kv->async()->Txn(&c, &request, r, std::move(done));
  });
  if (!ok) return ok.store_error();
  cluster_id_.store(response.header().cluster_id());
  TxnResult out;
  out.succeeded = response.succeeded();
  out.revision = response.header().revision();
  for (const auto& r : response.responses()) {
    if (!r.has_response_range()) continue;
    std::vector<KeyValue> kvs;
    for (const auto& kv : r.response_range().kvs()) kvs.push_back(from_pb(kv, prefix_));
    out.gets.push_back(std::move(kvs));
  }
  return out;
}

StoreStatus EtcdClient::put(const std::string& key, const std::string& value, std::int64_t lease) {
  pb::PutRequest request;
  request.set_key(prefix_ + key);
  request.set_value(value);
  request.set_lease(lease);
  pb::PutResponse response;
  // Not hedged: a repeat that arrives late would undo a later write of the key.
  auto ok = call("put", /*hedge=*/false, response, [&](Members::Member& m, grpc::ClientContext& c, pb::PutResponse* r, auto done) {
    m.kv->async()->Put(&c, &request, r, std::move(done));
  });
  if (ok) cluster_id_.store(response.header().cluster_id());
  return ok;
}

StoreStatus EtcdClient::erase_prefix(const std::string& prefix) {
  pb::DeleteRangeRequest request;
  request.set_key(prefix_ + prefix);
  request.set_range_end(prefix_range_end(prefix_ + prefix));
  pb::DeleteRangeResponse response;
  auto ok = call("delete", /*hedge=*/false, response,
                 [&](Members::Member& m, grpc::ClientContext& c, pb::DeleteRangeResponse* r, auto done) {
                   m.kv->async()->DeleteRange(&c, &request, r, std::move(done));
                 });
  if (ok) cluster_id_.store(response.header().cluster_id());
  return ok;
}

StoreResult<std::int64_t> EtcdClient::lease_grant(std::int64_t ttl_s) {
  pb::LeaseGrantRequest request;
  request.set_ttl(ttl_s);
  pb::LeaseGrantResponse response;
  // Not hedged: each attempt that is applied grants a lease.
  auto ok = call("lease grant", /*hedge=*/false, response,
                 [&](Members::Member& m, grpc::ClientContext& c, pb::LeaseGrantResponse* r, auto done) {
                   m.lease->async()->LeaseGrant(&c, &request, r, std::move(done));
                 });
  if (!ok) return ok.store_error();
  if (!response.error().empty())
    return store_error(Code::internal, "federation store " + description_ + ": lease grant refused: " + response.error());
  cluster_id_.store(response.header().cluster_id());
  return response.id();
}

StoreResult<std::int64_t> EtcdClient::lease_keep_alive(std::int64_t id) {
  pb::LeaseKeepAliveResponse response;
  // A stream, run to its end in start() (so one attempt at a time: not hedged).
  auto ok = call("lease keep-alive", /*hedge=*/false, response,
                 [&](Members::Member& m, grpc::ClientContext& c, pb::LeaseKeepAliveResponse* r, auto done) {
                   auto stream = m.lease->LeaseKeepAlive(&c);
                   pb::LeaseKeepAliveRequest request;
                   request.set_id(id);
                   bool answered = false;
                   if (stream->Write(request)) answered = stream->Read(r);
                   stream->WritesDone();
                   grpc::Status status = stream->Finish();
                   if (answered) status = grpc::Status::OK;
                   else if (status.ok())
                     status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the keep-alive stream closed without an answer");
                   done(std::move(status));
                 });
  if (!ok) return ok.store_error();
  cluster_id_.store(response.header().cluster_id());
  if (response.ttl() <= 0)
    return store_error(Code::not_found, "federation store " + description_ + ": lease " + std::to_string(id) + " has expired");
  return response.ttl();
}

StoreStatus EtcdClient::lease_revoke(std::int64_t id) {
  pb::LeaseRevokeRequest request;
  request.set_id(id);
  pb::LeaseRevokeResponse response;
  // Not hedged: a repeat finds the lease gone (NOT_FOUND) and could answer first.
  return call("lease revoke", /*hedge=*/false, response,
              [&](Members::Member& m, grpc::ClientContext& c, pb::LeaseRevokeResponse* r, auto done) {
                m.lease->async()->LeaseRevoke(&c, &request, r, std::move(done));
              });
}

// ---------------------------------------------------------------- watch

struct EtcdWatch::Shared {
  std::mutex mutex;
  std::condition_variable wake;
  grpc::ClientContext* context = nullptr;  // the live stream's, to cancel it
  bool stop = false;
};

EtcdWatch::~EtcdWatch() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stop = true;
    if (shared_->context) shared_->context->TryCancel();
  }
  shared_->wake.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<EtcdWatch> EtcdClient::watch_prefix(const std::string& prefix, std::int64_t start_revision,
                                                    EtcdWatch::OnEvents on_events, EtcdWatch::OnState on_state) {
  auto shared = std::make_shared<EtcdWatch::Shared>();
  std::unique_ptr<EtcdWatch> watch(new EtcdWatch(shared));
  const std::string key = prefix_ + prefix;
  // The thread uses the client's members: the watch must be destroyed before the client.
  watch->thread_ = std::thread([this, shared, key, start_revision, on_events = std::move(on_events),
                                on_state = std::move(on_state)] {
    std::int64_t next = start_revision;
    std::size_t index = current_.load();
    const std::size_t n = members_->list.size();
    while (true) {
      grpc::ClientContext context;
      // etcd cancels the watch when its member loses the leader instead of going quiet.
      context.AddMetadata("hasleader", "true");
      {
        std::lock_guard lock(shared->mutex);
        if (shared->stop) return;
        shared->context = &context;
      }
      auto& member = members_->list[index % n];
      auto stream = member.watch->Watch(&context);
      pb::WatchRequest request;
      auto* create = request.mutable_create_request();
      create->set_key(key);
      create->set_range_end(prefix_range_end(key));
      create->set_start_revision(next);
      std::string detail;
      if (stream->Write(request)) {
        pb::WatchResponse response;
        while (stream->Read(&response)) {
          if (response.created()) on_state(true, member.address);
          if (response.canceled()) {
            if (response.compact_revision() > 0) {
              detail = "revision " + std::to_string(next) + " was compacted (oldest kept " +
                       std::to_string(response.compact_revision()) + "); restarting from now";
              next = 0;
            } else {
              detail = "canceled by " + member.address + ": " + response.cancel_reason();
            }
            context.TryCancel();
            break;
          }
          if (response.events_size() == 0) continue;
          std::vector<WatchEvent> events;
          for (const auto& e : response.events()) {
            WatchEvent out;
            out.type = e.type() == pb::Event::DELETE ? WatchEvent::Type::erase : WatchEvent::Type::put;
            out.kv = from_pb(e.kv(), prefix_);
            next = std::max(next, e.kv().mod_revision() + 1);
            events.push_back(std::move(out));
          }
          on_events(events, response.header().revision());
        }
      }
      const grpc::Status status = stream->Finish();
      std::unique_lock lock(shared->mutex);
      shared->context = nullptr;
      if (shared->stop) return;
      if (detail.empty()) detail = member.address + ": " + status_text(status);
      lock.unlock();
      on_state(false, detail);
      lock.lock();
      ++index;
      shared->wake.wait_for(lock, std::chrono::milliseconds(500), [&] { return shared->stop; });
      if (shared->stop) return;
    }
  });
  return watch;
}

}  // namespace vxfed::federation
