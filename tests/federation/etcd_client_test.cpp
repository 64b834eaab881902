// EtcdClient against members that accept connections and never answer (a member cut off
// from its quorum, or blackholed, seen from the client) and small in-process gRPC servers
// that play healthy members or members in an election: a CallDeadline caps a call, whatever
// the per-member timeout and the election retries would allow; the error names the store; once
// a call has found the store unavailable, known_down() says so; a silent member is left within
// the call for the next one, and not waited for again in the same call while another member is
// in play; each client name starts from its own member. No etcd needed.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "federation/etcd_client.hpp"
#include "federation/etcd_rpc.grpc.pb.h"

namespace {

using namespace std::chrono_literals;
namespace fed = vxfed::federation;

// The fake members' gRPC server: `service` alone on a port of its own on loopback (`port`
// gets it). Each member calls it from its constructor, once its own state is set.
std::unique_ptr<grpc::Server> serve_on_loopback(grpc::Service* service, int& port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}
std::string loopback_endpoint(int port) { return "127.0.0.1:" + std::to_string(port); }

// A listening socket nobody reads: connections complete (the kernel's backlog), HTTP/2
// never starts.
class SilentMember {
 public:
  SilentMember() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~SilentMember() { ::close(fd_); }
  std::string endpoint() const { return loopback_endpoint(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A member that answers Range: refuses the first `refusals` requests the way a member in an
// election does ("etcdserver: no leader", UNAVAILABLE), serves every later one.
class ServingMember final : public etcdserverpb::KV::Service {
 public:
  explicit ServingMember(int refusals = 0) : refusals_(refusals) {
    server_ = serve_on_loopback(this, port_);
  }
  ~ServingMember() override { server_->Shutdown(std::chrono::system_clock::now()); }
  std::string endpoint() const { return loopback_endpoint(port_); }
  int requests() const { return requests_.load(); }

  grpc::Status Range(grpc::ServerContext*, const etcdserverpb::RangeRequest*, etcdserverpb::RangeResponse* out) override {
    if (requests_.fetch_add(1) < refusals_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "etcdserver: no leader");
    out->mutable_header()->set_revision(7);
    return grpc::Status::OK;
  }

 private:
  int refusals_;
  std::atomic<int> requests_{0};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A member waiting out an election it does not know about yet: it still believes in the old
// leader, so it neither serves nor refuses a request until `ready_after` has passed since it
// started (the followers' election timeout and the vote), then serves.
class ElectingMember final : public etcdserverpb::KV::Service {
 public:
  explicit ElectingMember(std::chrono::milliseconds ready_after)
      : ready_at_(std::chrono::steady_clock::now() + ready_after) {
    server_ = serve_on_loopback(this, port_);
  }
  ~ElectingMember() override { server_->Shutdown(std::chrono::system_clock::now()); }
  std::string endpoint() const { return loopback_endpoint(port_); }

  grpc::Status Range(grpc::ServerContext*, const etcdserverpb::RangeRequest*, etcdserverpb::RangeResponse* out) override {
    std::this_thread::sleep_until(ready_at_);
    out->mutable_header()->set_revision(9);
    return grpc::Status::OK;
  }

 private:
  std::chrono::steady_clock::time_point ready_at_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A member that refuses one request the way a member in an election does ("no leader": a
// reply) and is killed right after: from then on its connection is refused.
class ReplyThenDie final : public etcdserverpb::KV::Service {
 public:
  ReplyThenDie() {
    server_ = serve_on_loopback(this, port_);
    killer_ = std::thread([this] {
      while (!replied_.load()) std::this_thread::sleep_for(5ms);
      std::this_thread::sleep_for(20ms);
      server_->Shutdown(std::chrono::system_clock::now());
    });
  }
  ~ReplyThenDie() override {
    replied_.store(true);
    killer_.join();
  }
  std::string endpoint() const { return loopback_endpoint(port_); }

  grpc::Status Range(grpc::ServerContext*, const etcdserverpb::RangeRequest*, etcdserverpb::RangeResponse*) override {
    replied_.store(true);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "etcdserver: no leader");
  }

 private:
  std::atomic<bool> replied_{false};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::thread killer_;
};

// An address where nothing listens: connections are refused at once (a killed member).
std::string dead_member() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(EtcdClientDeadline, ACallDeadlineCapsACallOnSilentMembers) {
  SilentMember m1, m2, m3;
  fed::EtcdOptions options;
  options.endpoints = {m1.endpoint(), m2.endpoint(), m3.endpoint()};
  options.request_timeout_ms = 2000;  // without the cap: up to 6 s
  auto client = fed::EtcdClient::create(options);
  ASSERT_TRUE(client) << client.error();
  EXPECT_FALSE((*client)->known_down());
  const auto started = std::chrono::steady_clock::now();
  {
    fed::CallDeadline deadline(started + 400ms);
    auto r = (*client)->get("v1/pools");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), fed::Code::unavailable);
    EXPECT_NE(r.error().find("federation store etcd at " + m1.endpoint()), std::string::npos) << r.error();
  }
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 1500ms) << std::chrono::duration<double>(took).count() << " s";
  EXPECT_TRUE((*client)->known_down());
}

TEST(EtcdClientDeadline, NestedDeadlinesKeepTheEarlierEnd) {
  const auto now = std::chrono::steady_clock::now();
  EXPECT_FALSE(fed::CallDeadline::current());
  {
    fed::CallDeadline outer(now + 1s);
    {
      fed::CallDeadline inner(now + 5s);
      EXPECT_EQ(*fed::CallDeadline::current(), now + 1s);
    }
    {
      fed::CallDeadline inner(now + 100ms);
      EXPECT_EQ(*fed::CallDeadline::current(), now + 100ms);
    }
    EXPECT_EQ(*fed::CallDeadline::current(), now + 1s);
  }
  EXPECT_FALSE(fed::CallDeadline::current());
}

// The case: the first member listed is blackholed, the others healthy, a call under
// vxfedd's 2 s budget. Before attempt deadlines, the silent member's timeout spent the whole
// budget and the call failed UNAVAILABLE after 2.0 s.
TEST(EtcdClientSilentMember, IsLeftForTheNextMemberWithinTheCall) {
  SilentMember silent;
  ServingMember a, b;
  fed::EtcdOptions options;
  options.endpoints = {silent.endpoint(), a.endpoint(), b.endpoint()};
  options.request_timeout_ms = 2000;
  auto client = fed::EtcdClient::create(options);
  ASSERT_TRUE(client) << client.error();
  ASSERT_EQ((*client)->first_member(), silent.endpoint());  // no client name: the order listed
  const auto started = std::chrono::steady_clock::now();
  {
    fed::CallDeadline deadline(started + 2s);
    auto r = (*client)->get("v1/pools");
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->revision, 7);
  }
  const double took = seconds_since(started);
  EXPECT_LT(took, 0.5) << took << " s";
  EXPECT_GE(took, 0.2) << "the silent member was not tried first: " << took << " s";
  EXPECT_EQ((*client)->first_member(), a.endpoint());  // the one that answered
}

// An election seen from the client: the serving member refuses three times before it answers,
// the silent one never does. The silent member costs one attempt; the later passes of the same
// call ask the refusing member again without waiting for the silent one each time (that was
// 0.25 s a pass: about a second here).
TEST(EtcdClientSilentMember, IsNotWaitedForAgainWhileAnotherMemberIsInPlay) {
  ServingMember electing(/*refusals=*/3);
  SilentMember silent;
  fed::EtcdOptions options;
  options.endpoints = {electing.endpoint(), silent.endpoint()};
  options.request_timeout_ms = 2000;
  options.attempt_timeout_ms = 250;
  auto client = fed::EtcdClient::create(options);
  ASSERT_TRUE(client) << client.error();
  const auto started = std::chrono::steady_clock::now();
  {
    fed::CallDeadline deadline(started + 2s);
    auto r = (*client)->get("v1/pools");
    ASSERT_TRUE(r) << r.error();
  }
  const double took = seconds_since(started);
  EXPECT_EQ(electing.requests(), 4);
  // One attempt on the silent member (0.25 s) and three pauses between passes (0.1 s each).
  EXPECT_LT(took, 0.75) << took << " s";
}

// Every member silent: the call ends within its budget, having tried each in attempts of
// attempt_timeout_ms, again and again (none is left out when none answered).
TEST(EtcdClientSilentMember, AllSilentUseTheBudgetAndNameEachMember) {
  SilentMember m1, m2;
  fed::EtcdOptions options;
  options.endpoints = {m1.endpoint(), m2.endpoint()};
  options.request_timeout_ms = 2000;
  options.attempt_timeout_ms = 200;
  auto client = fed::EtcdClient::create(options);
  ASSERT_TRUE(client) << client.error();
  const auto started = std::chrono::steady_clock::now();
  fed::CallDeadline deadline(started + 1s);
  auto r = (*client)->get("v1/pools");
  ASSERT_FALSE(r);
  const double took = seconds_since(started);
  EXPECT_EQ(r.code(), fed::Code::unavailable);
  EXPECT_NE(r.error().find(m1.endpoint() + ": no answer within"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find(m2.endpoint() + ": no answer within"), std::string::npos) << r.error();
  EXPECT_GT(took, 0.9) << took << " s";
  EXPECT_LT(took, 1.3) << took << " s";
}

// The leader killed (federation_etcd, step 3): its connection is refused, and the two others
// hold requests until they have elected a new one. A refused connection is no answer: the
// silent members, the call's only hope, are asked again until they serve. (It ended after one
// pass, UNAVAILABLE in 0.5 s, while the election needed 0.6.)
// A client of a store whose first member was killed and whose two others are electing.
fed::StoreResult<std::unique_ptr<fed::EtcdClient>> client_after_a_leader_kill(const ElectingMember& a,
                                                                              const ElectingMember& b) {
  fed::EtcdOptions options;
  options.endpoints = {dead_member(), a.endpoint(), b.endpoint()};
  options.request_timeout_ms = 2000;
  options.attempt_timeout_ms = 250;
  return fed::EtcdClient::create(options);
}

TEST(EtcdClientSilentMember, AKilledMemberDoesNotKeepTheCallFromWaitingOutAnElection) {
  ElectingMember a(600ms), b(600ms);
  auto client = client_after_a_leader_kill(a, b);
  ASSERT_TRUE(client) << client.error();
  const auto started = std::chrono::steady_clock::now();
  fed::CallDeadline deadline(started + 2s);
  auto r = (*client)->get("v1/pools");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->revision, 9);
  const double took = seconds_since(started);
  EXPECT_LT(took, 1.5) << took << " s";
}

// The same after a call found the store away (the client then makes a single pass): the pass
// still waits the election out on a member that is there, instead of 250 ms per member.
TEST(EtcdClientSilentMember, ASinglePassAfterAFailureStillWaitsOutAnElection) {
  ElectingMember a(900ms), b(900ms);
  auto client = client_after_a_leader_kill(a, b);
  ASSERT_TRUE(client) << client.error();
  {
    fed::CallDeadline deadline(std::chrono::steady_clock::now() + 300ms);
    ASSERT_FALSE((*client)->get("v1/pools"));
  }
  ASSERT_TRUE((*client)->known_down());
  const auto started = std::chrono::steady_clock::now();
  fed::CallDeadline deadline(started + 2s);
  auto r = (*client)->get("v1/pools");
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE((*client)->known_down());
  EXPECT_LT(seconds_since(started), 1.5);
}

// A member that replied in the call's first pass and was killed before the second is no
// longer in play: the members that went unanswered (waiting out the election) are asked again.
// They were left out, and the call failed UNAVAILABLE in 0.5 s (faults_federated's
// etcd_member_kills under load: the killed leader's "Socket closed" counted as a reply).
TEST(EtcdClientSilentMember, AMemberThatRepliedAndDiedDoesNotKeepTheSilentOnesOut) {
  ReplyThenDie dying;
  ElectingMember a(700ms), b(700ms);
  fed::EtcdOptions options;
  options.endpoints = {dying.endpoint(), a.endpoint(), b.endpoint()};
  options.request_timeout_ms = 2000;
  options.attempt_timeout_ms = 250;
  std::vector<fed::CallTrace> traces;
  options.on_call = [&traces](const fed::CallTrace& t) { traces.push_back(t); };
  auto client = fed::EtcdClient::create(options);
  ASSERT_TRUE(client) << client.error();
  const auto started = std::chrono::steady_clock::now();
  fed::CallDeadline deadline(started + 2s);
  auto r = (*client)->get("v1/pools");
  ASSERT_EQ(traces.size(), 1u);
  ASSERT_TRUE(r) << r.error() << "\n" << traces[0].str();
  EXPECT_EQ(r->revision, 9);
  EXPECT_LT(seconds_since(started), 1.5) << traces[0].str();
  EXPECT_TRUE(traces[0].ok);
  EXPECT_GE(traces[0].attempts.size(), 4u) << traces[0].str();  // dying, a, b, dying (refused), then a
  EXPECT_EQ(traces[0].attempts.front().member, dying.endpoint());
  EXPECT_TRUE(std::any_of(traces[0].attempts.begin(), traces[0].attempts.end(),
                          [](const fed::CallTrace::Attempt& a) { return a.outcome == "ok"; }))
      << traces[0].str();
}

// A member that holds every request it got before `switch_after` (a write forwarded to a
// leader that was cut off: lost, answered only at etcd's own request timeout) and serves every
// later one at once (the new leader is there). Range, Txn and Put.
class HoldingMember final : public etcdserverpb::KV::Service {
 public:
  explicit HoldingMember(std::chrono::milliseconds switch_after)
      : switch_at_(std::chrono::steady_clock::now() + switch_after) {
    server_ = serve_on_loopback(this, port_);
  }
  ~HoldingMember() override { server_->Shutdown(std::chrono::system_clock::now()); }
  std::string endpoint() const { return loopback_endpoint(port_); }

  grpc::Status Range(grpc::ServerContext* c, const etcdserverpb::RangeRequest*, etcdserverpb::RangeResponse* out) override {
    return serve(c, out->mutable_header());
  }
  grpc::Status Txn(grpc::ServerContext* c, const etcdserverpb::TxnRequest*, etcdserverpb::TxnResponse* out) override {
    out->set_succeeded(true);
    return serve(c, out->mutable_header());
  }
  grpc::Status Put(grpc::ServerContext* c, const etcdserverpb::PutRequest*, etcdserverpb::PutResponse* out) override {
    return serve(c, out->mutable_header());
  }

 private:
  grpc::Status serve(grpc::ServerContext* c, etcdserverpb::ResponseHeader* header) {
    if (std::chrono::steady_clock::now() < switch_at_) {
      while (!c->IsCancelled()) std::this_thread::sleep_for(5ms);
      return grpc::Status(grpc::StatusCode::CANCELLED, "held");
    }
    header->set_revision(11);
    return grpc::Status::OK;
  }
  std::chrono::steady_clock::time_point switch_at_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Every member holds what it got during the election (650 ms here). A hedged call (a read, a
// guarded transaction) asks the next member every attempt time while the held attempts run
// on, so the first attempt asked after the election answers: within the attempt time of its
// end. Before, each attempt was cut at its limit, doubled after every silent pass (100, 200,
// 400 ms): the one asked at 600 ms was held until 1000 ms, the call answered at 1.0 s.
TEST(EtcdClientHedging, AHeldAttemptDoesNotHoldAHedgedCallPastTheElection) {
  for (const bool read : {true, false}) {
    HoldingMember a(650ms), b(650ms), c(650ms);
    fed::EtcdOptions options;
    options.endpoints = {a.endpoint(), b.endpoint(), c.endpoint()};
    options.request_timeout_ms = 2000;
    options.attempt_timeout_ms = 100;
    std::vector<fed::CallTrace> traces;
    options.on_call = [&traces](const fed::CallTrace& t) { traces.push_back(t); };
    auto client = fed::EtcdClient::create(options);
    ASSERT_TRUE(client) << client.error();
    const auto started = std::chrono::steady_clock::now();
    fed::CallDeadline deadline(started + 2s);
    bool ok = false;
    if (read) {
      ok = static_cast<bool>((*client)->get("v1/pools"));
    } else {
      auto r = (*client)->txn({fed::Compare::absent("v1/x")}, {fed::Op::put("v1/x", "1")}, {});
      ok = r && r->succeeded;
    }
    const double took = seconds_since(started);
    ASSERT_EQ(traces.size(), 1u);
    EXPECT_TRUE(ok) << traces[0].str();
    EXPECT_TRUE(traces[0].hedged) << traces[0].str();
    EXPECT_GE(took, 0.6) << traces[0].str();
    EXPECT_LT(took, 0.9) << (read ? "read: " : "guarded txn: ") << traces[0].str();
    // The attempts overlapped: one began before the one before it ended.
    bool overlapped = false;
    for (std::size_t i = 1; i < traces[0].attempts.size(); ++i)
      for (std::size_t k = 0; k < i; ++k)
        overlapped = overlapped || traces[0].attempts[i].at_ms < traces[0].attempts[k].at_ms + traces[0].attempts[k].took_ms;
    EXPECT_TRUE(overlapped) << traces[0].str();
  }
}

// A plain put is not hedged (a repeat arriving late would undo a later write of the key), nor a
// transaction without a guard: one attempt at a time, each cut at its limit.
TEST(EtcdClientHedging, UnguardedWritesAreNotHedged) {
  HoldingMember a(650ms), b(650ms), c(650ms);
  fed::EtcdOptions options;
  options.endpoints = {a.endpoint(), b.endpoint(), c.endpoint()};
  options.request_timeout_ms = 2000;
  options.attempt_timeout_ms = 100;
  std::vector<fed::CallTrace> traces;
  options.on_call = [&traces](const fed::CallTrace& t) { traces.push_back(t); };
  auto client = fed::EtcdClient::create(options);
  ASSERT_TRUE(client) << client.error();
  fed::CallDeadline deadline(std::chrono::steady_clock::now() + 3s);
  EXPECT_TRUE((*client)->put("v1/p", "1"));
  EXPECT_TRUE((*client)->txn({}, {fed::Op::put("v1/q", "1")}, {}));
  ASSERT_EQ(traces.size(), 2u);
  for (const auto& t : traces) {
    EXPECT_FALSE(t.hedged) << t.str();
    for (std::size_t i = 1; i < t.attempts.size(); ++i)
      EXPECT_GE(t.attempts[i].at_ms + 1, t.attempts[i - 1].at_ms + t.attempts[i - 1].took_ms) << t.str();
  }
}

// Each node's client starts from its own member: a rendezvous hash of the node's name over the
// member addresses. Stable, independent of the order the endpoints are listed in, spread.
TEST(MemberOrder, SpreadsNodesOverTheMembersWhateverTheListOrder) {
  const std::vector<std::string> members = {"198.18.5.1:2379", "198.18.5.2:2379", "198.18.5.3:2379"};
  const std::vector<std::string> reversed(members.rbegin(), members.rend());
  std::map<std::string, int> first;
  for (int i = 0; i < 300; ++i) {
    const std::string node = "node-" + std::to_string(i);
    const auto order = fed::member_order(node, members);
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(std::set<std::size_t>(order.begin(), order.end()).size(), 3u) << node;
    EXPECT_EQ(order, fed::member_order(node, members)) << node;  // stable
    const auto other = fed::member_order(node, reversed);
    for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(members[order[k]], reversed[other[k]]) << node;
    ++first[members[order[0]]];
  }
  ASSERT_EQ(first.size(), 3u);
  for (const auto& [member, count] : first) EXPECT_GT(count, 60) << member << " is first for " << count << " of 300";
  EXPECT_EQ(fed::member_order("", members), (std::vector<std::size_t>{0, 1, 2}));
}

// Removing a member moves only the nodes that had it first.
TEST(MemberOrder, RemovingAMemberMovesOnlyItsNodes) {
  const std::vector<std::string> three = {"10.0.0.1:2379", "10.0.0.2:2379", "10.0.0.3:2379"};
  const std::vector<std::string> two = {"10.0.0.1:2379", "10.0.0.2:2379"};
  for (int i = 0; i < 100; ++i) {
    const std::string node = "node-" + std::to_string(i);
    const std::string before = three[fed::member_order(node, three)[0]];
    const std::string after = two[fed::member_order(node, two)[0]];
    if (before != three[2]) {
      EXPECT_EQ(before, after) << node;
    }
  }
}

}  // namespace
