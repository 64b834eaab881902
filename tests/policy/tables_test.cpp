// The compiled policy tables (policy/tables.hpp, policy/table_compiler.hpp) against the
// reference semantics (policy/compile.hpp: compile() and allowed()). A seeded random world
// (hundreds of policies with every rule kind, identities of two clusters, local pods with and
// without labels) is compiled, and every decision the forwarder could ask is compared with the
// reference over every local identity, every peer identity (the reserved ones too), addresses
// at every ipBlock and except edge, and ports at every range edge; then again after a sequence
// of incremental changes. Hand-written cases below pin the choices docs/policy.md describes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "policy/compile.hpp"
#include "policy/parse.hpp"
#include "policy/table_compiler.hpp"
#include "policy/tables.hpp"

namespace {

using namespace vxfed::policy;
using vxfed::net::Ipv4Addr;
using vxfed::net::Ipv4Prefix;

constexpr std::uint8_t kIcmp = 1, kTcp = 6, kUdp = 17;
const std::string kNetwork = "fed-a";

// ---------------------------------------------------------------------------------------------
// The random world.

struct World {
  std::vector<Policy> policies;
  std::vector<NumberedIdentity> identities;
  std::vector<LocalIdentity> locals;
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  World world(int n_policies, int n_identities) {
    World w;
    std::set<std::string> keys;
    std::uint16_t next = 256;
    while (static_cast<int>(w.identities.size()) < n_identities) {
      Identity id = identity();
      // Numbers spread over the 16 bits (gaps as releases leave them), so that the tables'
      // per-high-byte peer index has many buckets.
      if (keys.insert(canonical_key(id)).second) {
        w.identities.push_back({next, std::move(id)});
        next = static_cast<std::uint16_t>(next + 1 + below(300));
      }
    }
    for (int i = 0; i < n_policies; ++i) w.policies.push_back(policy(i));
    // The node is in cluster a: some of its identities, and unlabelled pods of two namespaces.
    for (const auto& n : w.identities)
      if (n.identity.cluster == "a" && w.locals.size() < 14 && chance(0.25)) w.locals.push_back(n);
    w.locals.push_back({kPeerUnlabelled, Identity::make_unlabelled("a", "prod")});
    w.locals.push_back({kPeerUnlabelled, Identity::make_unlabelled("a", "dev")});
    return w;
  }

  Identity identity() {
    Identity id;
    id.cluster = pick({"a", "b"});
    id.namespace_name = pick(namespaces_);
    id.namespace_labels = {{"kubernetes.io/metadata.name", id.namespace_name}};
    // Namespace labels differ between clusters and, now and then, within one (a relabelling).
    if (chance(0.7)) id.namespace_labels["team"] = pick({"blue", "red"});
    if (chance(0.5)) id.namespace_labels["env"] = pick({"prod", "dev"});
    if (chance(0.85)) id.pod_labels["app"] = pick({"web", "db", "cache", "api", "batch"});
    if (chance(0.5)) id.pod_labels["tier"] = pick({"front", "back"});
    if (chance(0.2)) id.pod_labels["version"] = pick({"v1", "v2"});
    return id;
  }

  Policy policy(int i) {
    Policy p;
    p.cluster = chance(0.85) ? "a" : "b";
    p.namespace_name = pick(namespaces_);
    p.name = "p" + std::to_string(i);
    p.policy_for = {{p.namespace_name, chance(0.9) ? kNetwork : "fed-b"}};
    if (!chance(0.3)) p.pod_selector = selector();
    const int types = static_cast<int>(rng_() % 3);  // Ingress, Egress, both
    p.ingress_type = types != 1;
    p.egress_type = types != 0;
    // Rules of a type not in force are kept and must change nothing.
    p.ingress = rules();
    p.egress = rules();
    return p;
  }

  // Address and port edges of the world, to probe at.
  std::vector<std::optional<Ipv4Addr>> addresses;
  std::set<std::uint16_t> ports{0, 1, 65535};

 private:
  bool chance(double p) { return std::uniform_real_distribution<>(0, 1)(rng_) < p; }
  int below(int n) { return static_cast<int>(rng_() % n); }
  std::string pick(const std::vector<std::string>& from) { return from[rng_() % from.size()]; }

  LabelSelector selector() {
    LabelSelector s;
    const int kind = below(6);
    if (kind == 0) return s;  // {}
    if (kind <= 2) s.match_labels["app"] = pick({"web", "db", "cache", "api", "batch"});
    if (kind == 2 && chance(0.5)) s.match_labels["tier"] = pick({"front", "back"});
    if (kind >= 3) {
      Requirement r;
      r.key = pick({"app", "tier", "version"});
      r.op = static_cast<Operator>(below(4));
      if (r.op == Operator::In || r.op == Operator::NotIn) {
        r.values.push_back(pick({"web", "db", "front", "v1"}));
        if (chance(0.5)) r.values.push_back(pick({"api", "back", "v2"}));
      }
      s.match_expressions.push_back(r);
    }
    return s;
  }

  LabelSelector namespace_selector() {
    LabelSelector s;
    switch (below(4)) {
      case 0: break;  // every namespace
      case 1: s.match_labels["team"] = pick({"blue", "red"}); break;
      case 2: s.match_labels["kubernetes.io/metadata.name"] = pick(namespaces_); break;
      default: s.match_expressions.push_back({"env", static_cast<Operator>(below(4)), {}});
        if (s.match_expressions[0].op <= Operator::NotIn) s.match_expressions[0].values = {"prod"};
    }
    return s;
  }

  Ipv4Prefix prefix(std::uint32_t base, unsigned len) {
    return Ipv4Prefix::make(base | (static_cast<std::uint32_t>(rng_()) & ~vxfed::net::prefix_mask(8)), len);
  }

  void note(const Ipv4Prefix& p) {
    for (std::int64_t a : {std::int64_t{p.addr} - 1, std::int64_t{p.addr}, std::int64_t{p.last().value},
                           std::int64_t{p.last().value} + 1})
      addresses.push_back(Ipv4Addr{static_cast<std::uint32_t>(a)});
  }

  Peer peer() {
    Peer p;
    switch (below(4)) {
      case 0: p.pod_selector = selector(); break;
      case 1: p.namespace_selector = namespace_selector(); break;
      case 2: p.pod_selector = selector(); p.namespace_selector = namespace_selector(); break;
      default: {
        // 10.0.0.0/8 in blocks of /12../24, with excepts strictly inside.
        IpBlock b;
        b.cidr = prefix(0x0a000000, 12 + below(13));
        note(b.cidr);
        const int n_except = below(3);
        for (int i = 0; i < n_except && b.cidr.len < 30; ++i) {
          const unsigned len = b.cidr.len + 1 + below(std::min(6, 31 - b.cidr.len));
          const Ipv4Prefix e = Ipv4Prefix::make(b.cidr.addr | (static_cast<std::uint32_t>(rng_()) & ~b.cidr.mask()), len);
          b.except.push_back(e);
          note(e);
        }
        p.ip_block = b;
      }
    }
    return p;
  }

  std::vector<Rule> rules() {
    std::vector<Rule> out;
    const int n = below(4);  // 0: with the type in force, deny all
    for (int i = 0; i < n; ++i) {
      Rule r;
      const int n_peers = chance(0.04) ? 0 : 1 + below(3);
      for (int j = 0; j < n_peers; ++j) r.peers.push_back(peer());
      const int n_ports = chance(0.1) ? 0 : 1 + below(2);
      for (int j = 0; j < n_ports; ++j) {
        Port port;
        port.protocol = chance(0.7) ? Protocol::Tcp : Protocol::Udp;
        if (chance(0.85)) {
          port.port = static_cast<std::uint16_t>(chance(0.5) ? 1 + below(1024) : 1 + below(65535));
          if (chance(0.4))
            port.end_port = static_cast<std::uint16_t>(std::min(65535, *port.port + below(2000)));
          for (int edge : {*port.port - 1, int{*port.port}, int{port.end_port.value_or(*port.port)},
                           port.end_port.value_or(*port.port) + 1})
            if (edge >= 0 && edge <= 65535) ports.insert(static_cast<std::uint16_t>(edge));
        }
        r.ports.push_back(port);
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  std::mt19937_64 rng_;
  std::vector<std::string> namespaces_{"prod", "dev", "monitoring", "data", "batch", "web", "ml", "ci", "ops", "edge"};
};

// ---------------------------------------------------------------------------------------------
// The comparison.

// What the reference sees for an identity number: no identity for unknown and world, the
// unlabelled identity without a namespace (a remote node's view of number 1).
std::optional<Identity> reference_identity(const std::map<std::uint16_t, Identity>& universe, std::uint16_t n) {
  if (n == kPeerUnlabelled) return Identity::make_unlabelled();
  const auto it = universe.find(n);
  if (it == universe.end()) return std::nullopt;
  return it->second;
}

// The tables of a node that every identity has a pod on: the destination of any peer, where
// a source's asked egress is decided.
PolicyCompiler everywhere(const World& w) {
  std::vector<LocalIdentity> all(w.identities.begin(), w.identities.end());
  all.push_back({kPeerUnlabelled, Identity::make_unlabelled()});
  PolicyCompiler c(kNetwork);
  c.build(w.policies, w.identities, std::move(all));
  return c;
}

struct Checker {
  const PolicyTables& tables;
  const PolicyTables& destination;  // everywhere()'s
  const std::vector<Policy>& policies;
  const std::map<std::uint16_t, Identity>& universe;
  const std::vector<LocalIdentity>& locals;
  std::vector<std::optional<Ipv4Addr>> addresses;
  std::vector<std::uint16_t> ports;
  std::mt19937_64 rng{7};
  std::size_t decisions = 0;
  std::size_t allowed_count = 0;
  std::size_t asked = 0;
  std::size_t asked_allowed = 0;  // asks of labelled sources the destination answers with allow

  std::vector<std::uint16_t> peer_numbers() const {
    std::vector<std::uint16_t> out{kPeerUnknown, kPeerUnlabelled, kPeerWorld};
    for (const auto& [n, id] : universe) out.push_back(n);
    return out;
  }

  // A few addresses per identity (all of them for the identities that carry none), so the
  // identity lookup and the address lookup are both exercised, alone and together.
  std::vector<std::optional<Ipv4Addr>> addresses_for(std::uint16_t n) {
    if (n == kPeerUnknown || n == kPeerWorld) return addresses;
    std::vector<std::optional<Ipv4Addr>> out{std::nullopt};
    for (int i = 0; i < 3; ++i) out.push_back(addresses[rng() % addresses.size()]);
    return out;
  }

  void compare_local(std::size_t local) {
    const LocalIdentity& me = locals[local];
    const CompiledRules rules = compile(me.identity, kNetwork, policies);
    for (std::uint16_t peer : peer_numbers()) {
      const std::optional<Identity> peer_id = reference_identity(universe, peer);
      for (const auto& address : addresses_for(peer)) {
        for (std::uint8_t proto : {kIcmp, kTcp, kUdp}) {
          for (std::uint16_t port : ports) {
            const PeerRef ref_peer{peer_id, address};
            const bool in = allowed(rules, Direction::Ingress, ref_peer, proto, port);
            const bool out = allowed(rules, Direction::Egress, ref_peer, proto, port);
            ASSERT_EQ(decide(tables, tables.local_ingress[local], peer, address, proto, port), in)
                << "ingress of local " << local << " from " << peer << " at " << (address ? address->str() : "-")
                << " proto " << int{proto} << " port " << port;
            ASSERT_EQ(decide(tables, tables.local_egress[local], peer, address, proto, port), out)
                << "egress of local " << local << " to " << peer;
            decisions += 2;
            allowed_count += in + out;
            if (!address) continue;
            ASSERT_EQ(decide_ingress(tables, static_cast<std::uint32_t>(local), peer, *address, proto, port), in);
            // Toward another node: the source decides what needs no identity, the destination the rest.
            const EgressAtSource at_source =
                decide_egress_at_source(tables, static_cast<std::uint32_t>(local), *address, proto, port);
            if (at_source == EgressAtSource::Allow) {
              ASSERT_TRUE(out) << "source allowed what the reference denies: local " << local << " to " << peer;
            } else if (at_source == EgressAtSource::Deny) {
              ASSERT_FALSE(out) << "source denied what the reference allows: local " << local << " to " << peer;
            } else {
              ++asked;
              asked_allowed += out && me.number != kPeerUnlabelled;
              const bool at_destination = decide_remote_egress(destination, me.number, peer, *address, proto, port);
              if (me.number == kPeerUnlabelled) {
                ASSERT_FALSE(at_destination) << "an unlabelled source's asked egress fails closed";
              } else {
                ASSERT_EQ(at_destination, out) << "egress of " << me.number << " checked at " << peer;
              }
            }
          }
        }
      }
    }
  }

  // A remote source's egress toward this node's identities, as the destination decides it.
  void compare_remote_egress(std::uint16_t source) {
    const Identity& src = universe.at(source);
    const CompiledRules rules = compile(src, kNetwork, policies);
    for (const LocalIdentity& local : locals) {
      const std::optional<Identity> peer_id = reference_identity(universe, local.number);
      for (const auto& address : addresses_for(local.number)) {
        if (!address) continue;
        for (std::uint8_t proto : {kIcmp, kTcp, kUdp})
          for (std::uint16_t port : ports) {
            ASSERT_EQ(decide_remote_egress(tables, source, local.number, *address, proto, port),
                      allowed(rules, Direction::Egress, PeerRef{peer_id, address}, proto, port))
                << "egress of remote " << source << " to local " << local.number << " port " << port;
            ++decisions;
          }
      }
    }
  }

  void compare_all() {
    for (std::size_t i = 0; i < locals.size(); ++i) compare_local(i);
    for (const auto& [n, id] : universe) compare_remote_egress(n);
  }
};

std::map<std::uint16_t, Identity> universe_of(const std::vector<NumberedIdentity>& ids) {
  std::map<std::uint16_t, Identity> out;
  for (const auto& n : ids) out.emplace(n.number, n.identity);
  return out;
}

std::vector<std::uint16_t> sampled(const std::set<std::uint16_t>& all, std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint16_t> v(all.begin(), all.end());
  std::shuffle(v.begin(), v.end(), rng);
  if (v.size() > n) v.resize(n);
  v.insert(v.end(), {0, 1, 53, 80, 443, 65535});
  return v;
}

TEST(PolicyTables, EqualTheReferenceOnARandomWorld) {
  Generator gen(20261206);
  World w = gen.world(400, 160);
  PolicyCompiler compiler(kNetwork);
  compiler.build(w.policies, w.identities, w.locals);
  const auto universe = universe_of(w.identities);
  std::mt19937_64 rng(1);
  const PolicyCompiler destination = everywhere(w);
  Checker check{compiler.tables(), destination.tables(), w.policies, universe, w.locals, gen.addresses, sampled(gen.ports, 16, rng)};
  check.compare_all();
  // The world is not degenerate: both verdicts occur, and the source does leave work to the destination.
  EXPECT_GT(check.decisions, 1'000'000u);
  EXPECT_GT(check.allowed_count, check.decisions / 20);
  EXPECT_LT(check.allowed_count, check.decisions - check.decisions / 20);
  EXPECT_GT(check.asked, 100u);
  EXPECT_GT(check.asked_allowed, 100u);
  std::printf("%zu decisions, %zu allowed, %zu egress asks of the destination, %zu of them allowed\n",
              check.decisions, check.allowed_count, check.asked, check.asked_allowed);
  // Identical port sets are stored once.
  const auto& sets = compiler.tables().port_sets;
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (std::size_t j = i + 1; j < sets.size(); ++j) ASSERT_FALSE(sets[i] == sets[j]) << i << " " << j;
}

TEST(PolicyTables, EqualTheReferenceAfterIncrementalChanges) {
  Generator gen(7);
  World w = gen.world(300, 140);
  PolicyCompiler compiler(kNetwork);
  compiler.build(w.policies, w.identities, w.locals);
  std::mt19937_64 rng(3);
  std::uint16_t next = static_cast<std::uint16_t>(w.identities.back().number + 1);
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 8; ++i) {
      switch (rng() % 5) {
        case 0: {  // a policy replaced by another of the same name and namespace
          Policy& old = w.policies[rng() % w.policies.size()];
          Policy p = gen.policy(static_cast<int>(rng() % 100000));
          p.name = old.name;
          p.cluster = old.cluster;
          p.namespace_name = old.namespace_name;
          p.policy_for = old.policy_for;
          old = p;
          compiler.apply_policy(p);
          break;
        }
        case 1: {  // a new policy
          Policy p = gen.policy(5000 + round * 10 + i);
          w.policies.push_back(p);
          compiler.apply_policy(p);
          break;
        }
        case 2: {  // a policy deleted
          const std::size_t at = rng() % w.policies.size();
          const Policy p = w.policies[at];
          w.policies.erase(w.policies.begin() + static_cast<long>(at));
          compiler.delete_policy(p.cluster, p.namespace_name, p.name);
          break;
        }
        case 3: {  // a new identity (a pod with a new label set, anywhere)
          NumberedIdentity n{next++, gen.identity()};
          w.identities.push_back(n);
          compiler.add_identity(n);
          break;
        }
        default: {  // an identity released
          const std::size_t at = rng() % w.identities.size();
          const std::uint16_t number = w.identities[at].number;
          if (std::any_of(w.locals.begin(), w.locals.end(), [&](const auto& l) { return l.number == number; })) break;
          w.identities.erase(w.identities.begin() + static_cast<long>(at));
          compiler.remove_identity(number);
        }
      }
    }
    if (round == 2) {  // a pod of a new identity starts here
      w.locals.push_back(w.identities.back());
      compiler.add_local(w.locals.back());
    }
    if (round == 4) {  // the node's pods replaced: a local identity goes, another comes
      w.locals.erase(w.locals.begin());
      w.locals.push_back(w.identities[w.identities.size() / 2]);
      compiler.set_locals(w.locals);
    }
    const auto universe = universe_of(w.identities);
    // Fewer probes per round than the test above: every edge over the rounds, not in each.
    std::vector<std::optional<Ipv4Addr>> addresses = gen.addresses;
    std::shuffle(addresses.begin(), addresses.end(), rng);
    addresses.resize(std::min<std::size_t>(addresses.size(), 150));
    const PolicyCompiler destination = everywhere(w);
    Checker check{compiler.tables(), destination.tables(), w.policies, universe, w.locals, addresses,
                  sampled(gen.ports, 6, rng)};
    check.compare_all();
    if (HasFatalFailure()) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Hand-written cases: the choices of docs/policy.md, "Compiled tables".

std::vector<Policy> parsed(const std::string& specs) {
  auto r = parse_objects(specs, "a", "test");
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r->policies : std::vector<Policy>{};
}

std::string policy(const std::string& name, const std::string& spec, const std::string& ns = "prod") {
  return "---\napiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: " + name +
         "\n  namespace: " + ns + "\n  annotations:\n    k8s.v1.cni.cncf.io/policy-for: fed-a\nspec:\n" + spec;
}

Identity pod(const std::string& cluster, const std::string& ns, Labels labels, Labels ns_labels = {}) {
  ns_labels["kubernetes.io/metadata.name"] = ns;
  return Identity{cluster, ns, ns_labels, std::move(labels), false};
}

Ipv4Addr ip(const char* text) { return *Ipv4Addr::parse(text); }

class HandWritten : public ::testing::Test {
 protected:
  void compile_with(const std::string& specs, std::vector<LocalIdentity> locals) {
    compiler.build(parsed(specs), ids, std::move(locals));
  }
  PolicyCompiler compiler{kNetwork};
  std::vector<NumberedIdentity> ids{
      {300, pod("a", "prod", {{"app", "web"}}, {{"team", "blue"}})},
      {301, pod("a", "prod", {{"app", "db"}}, {{"team", "blue"}})},
      {302, pod("b", "prod", {{"app", "web"}}, {{"team", "red"}})},  // the same namespace, another cluster
      {303, pod("a", "dev", {{"app", "web"}}, {{"team", "red"}})},
  };
};

TEST_F(HandWritten, IngressBySourceIdentityAcrossClustersAndByAddress) {
  compile_with(policy("db", "  podSelector: {matchLabels: {app: db}}\n  ingress:\n"
                            "  - from: [{podSelector: {matchLabels: {app: web}}}]\n    ports: [{port: 5432}]\n"
                            "  - from: [{ipBlock: {cidr: 192.168.0.0/16, except: [192.168.1.0/24]}}]\n"
                            "    ports: [{protocol: UDP, port: 5000, endPort: 5010}]\n"),
               {{301, ids[1].identity}});
  const auto& t = compiler.tables();
  const Ipv4Addr pod_address = ip("10.1.0.7");
  EXPECT_TRUE(decide_ingress(t, 0, 300, pod_address, kTcp, 5432)) << "web of prod, cluster a";
  EXPECT_TRUE(decide_ingress(t, 0, 302, pod_address, kTcp, 5432)) << "web of prod in cluster b: namespace sameness";
  EXPECT_FALSE(decide_ingress(t, 0, 303, pod_address, kTcp, 5432)) << "web of dev";
  EXPECT_FALSE(decide_ingress(t, 0, 300, pod_address, kTcp, 5433));
  EXPECT_FALSE(decide_ingress(t, 0, kPeerUnknown, pod_address, kTcp, 5432)) << "no GBP: no selector matches";
  EXPECT_TRUE(decide_ingress(t, 0, kPeerWorld, ip("192.168.2.1"), kUdp, 5010));
  EXPECT_TRUE(decide_ingress(t, 0, kPeerUnknown, ip("192.168.0.0"), kUdp, 5000)) << "ipBlock needs no identity";
  EXPECT_FALSE(decide_ingress(t, 0, kPeerWorld, ip("192.168.1.9"), kUdp, 5005)) << "except";
  EXPECT_FALSE(decide_ingress(t, 0, kPeerWorld, ip("192.168.2.1"), kUdp, 5011)) << "past endPort";
  EXPECT_FALSE(decide_ingress(t, 0, kPeerWorld, ip("192.168.2.1"), kTcp, 5005)) << "TCP is not UDP";
  // The except cuts the block in two spans, both pointing at one port set.
  ASSERT_EQ(t.local_ingress[0].addresses.size(), 2u);
  EXPECT_EQ(t.local_ingress[0].addresses[0].ports, t.local_ingress[0].addresses[1].ports);
  EXPECT_EQ(t.local_ingress[0].addresses[0].last, ip("192.168.0.255").value);
  EXPECT_EQ(t.local_ingress[0].addresses[1].first, ip("192.168.2.0").value);
  // Egress is not isolated: no table to look at, everything passes.
  EXPECT_EQ(decide_egress_at_source(t, 0, ip("8.8.8.8"), kUdp, 53), EgressAtSource::Allow);
}

// Drops per policy (docs/policy.md): the policies that isolate each local identity, per
// direction; an unlabelled pod is isolated by those that may select it, as compile() has it.
TEST_F(HandWritten, IsolatingPoliciesPerLocalIdentityAndDirection) {
  compile_with(policy("db", "  podSelector: {matchLabels: {app: db}}\n  ingress: []\n") +
                   policy("all-in", "  podSelector: {}\n  policyTypes: [Ingress]\n") +
                   policy("web-out", "  podSelector: {matchLabels: {app: web}}\n  policyTypes: [Egress]\n") +
                   policy("dev-all", "  podSelector: {}\n  policyTypes: [Ingress, Egress]\n", "dev"),
               {{300, ids[0].identity}, {301, ids[1].identity},
                {kPeerUnlabelled, Identity::make_unlabelled("a", "prod")}});
  using V = std::vector<std::string>;
  EXPECT_EQ(compiler.isolating(0, Direction::Ingress), (V{"prod/all-in"}));
  EXPECT_EQ(compiler.isolating(0, Direction::Egress), (V{"prod/web-out"}));
  EXPECT_EQ(compiler.isolating(1, Direction::Ingress), (V{"prod/all-in", "prod/db"}));
  EXPECT_EQ(compiler.isolating(1, Direction::Egress), V{});
  EXPECT_EQ(compiler.isolating(2, Direction::Ingress), (V{"prod/all-in", "prod/db"})) << "unlabelled: Maybe isolates";
  EXPECT_EQ(compiler.isolating(2, Direction::Egress), (V{"prod/web-out"}));
  EXPECT_EQ(compiler.isolating(3, Direction::Ingress), V{}) << "no such local identity";
  // Each isolation the tables have is explained by some policy, and the other way round.
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(compiler.tables().local_ingress[i].isolated, !compiler.isolating(i, Direction::Ingress).empty()) << i;
    EXPECT_EQ(compiler.tables().local_egress[i].isolated, !compiler.isolating(i, Direction::Egress).empty()) << i;
  }
}

TEST_F(HandWritten, EgressSplitBetweenSourceAndDestination) {
  compile_with(policy("web-out", "  podSelector: {matchLabels: {app: web}}\n  policyTypes: [Egress]\n  egress:\n"
                                 "  - to: [{podSelector: {matchLabels: {app: db}}}]\n    ports: [{port: 5432}]\n"
                                 "  - to: [{ipBlock: {cidr: 10.9.0.0/16}}]\n    ports: [{protocol: UDP, port: 53}]\n"),
               {{300, ids[0].identity}, {301, ids[1].identity}});
  const auto& t = compiler.tables();
  // At web's node: DNS to the block is decided there; the database needs its identity.
  EXPECT_EQ(decide_egress_at_source(t, 0, ip("10.9.0.10"), kUdp, 53), EgressAtSource::Allow);
  EXPECT_EQ(decide_egress_at_source(t, 0, ip("10.1.0.8"), kTcp, 5432), EgressAtSource::AskDestination);
  EXPECT_EQ(decide_egress_at_source(t, 0, ip("10.1.0.8"), kTcp, 80), EgressAtSource::Deny);
  // At the database's node, from web's identity in the GBP header (A bit clear).
  EXPECT_TRUE(decide_remote_egress(t, 300, 301, ip("10.1.0.8"), kTcp, 5432));
  EXPECT_FALSE(decide_remote_egress(t, 300, 300, ip("10.1.0.8"), kTcp, 5432)) << "web to web is not allowed";
  EXPECT_TRUE(decide_remote_egress(t, 301, 300, ip("10.1.0.8"), kTcp, 80)) << "db has no egress policy";
  // Two pods on this node: the whole decision here.
  EXPECT_TRUE(decide_local_egress(t, 0, 301, ip("10.1.0.8"), kTcp, 5432));
  // An unlabelled source that asks is refused at the destination: it fails closed.
  EXPECT_FALSE(decide_remote_egress(t, kPeerUnlabelled, 301, ip("10.1.0.8"), kTcp, 5432));
}

TEST_F(HandWritten, UnlabelledPeersMatchOnlySelectorsThatMatchEverything) {
  compile_with(policy("from-all-ns", "  podSelector: {}\n  ingress:\n  - from: [{namespaceSelector: {}}]\n"
                                     "    ports: [{port: 80}]\n"
                                     "  - from: [{podSelector: {matchExpressions: [{key: app, operator: DoesNotExist}]}}]\n"
                                     "    ports: [{port: 81}]\n"),
               {{300, ids[0].identity}});
  const auto& t = compiler.tables();
  EXPECT_TRUE(decide_ingress(t, 0, kPeerUnlabelled, ip("10.1.0.1"), kTcp, 80));
  EXPECT_FALSE(decide_ingress(t, 0, kPeerUnlabelled, ip("10.1.0.1"), kTcp, 81)) << "DoesNotExist might not hold";
  EXPECT_FALSE(decide_ingress(t, 0, kPeerUnknown, ip("10.1.0.1"), kTcp, 80));
}

TEST_F(HandWritten, IncrementalChangesTouchOnlyTheirNamespaceAndPeers) {
  std::string specs;
  for (int i = 0; i < 20; ++i)
    specs += policy("p" + std::to_string(i), "  podSelector: {}\n  policyTypes: [Ingress, Egress]\n  ingress:\n"
                                             "  - from: [{podSelector: {}}]\n  egress:\n  - ports: [{port: 53}]\n",
                    i % 2 ? "prod" : "dev");
  compile_with(specs, {{300, ids[0].identity}, {303, ids[3].identity}});
  const auto& t = compiler.tables();
  EXPECT_TRUE(decide_ingress(t, 0, 301, ip("10.1.0.1"), kTcp, 1));
  // A policy of dev rebuilds dev's local tables and the remote egress of dev's identity only.
  Policy p = parsed(policy("new", "  podSelector: {}\n  policyTypes: [Egress]\n", "dev"))[0];
  ChangeCost cost = compiler.apply_policy(p);
  EXPECT_EQ(cost.tables_rebuilt, 3u);
  // A new identity of prod in cluster b is one peer entry in prod's ingress table and nothing else.
  cost = compiler.add_identity({400, pod("b", "prod", {{"app", "api"}})});
  EXPECT_EQ(cost.peer_entries_set, 1u);
  EXPECT_TRUE(decide_ingress(t, 0, 400, ip("10.1.0.1"), kTcp, 1));
  EXPECT_FALSE(decide_ingress(t, 1, 400, ip("10.1.0.1"), kTcp, 1)) << "dev takes only dev's pods";
  cost = compiler.remove_identity(400);
  EXPECT_EQ(cost.peer_entries_set, 1u);
  EXPECT_FALSE(decide_ingress(t, 0, 400, ip("10.1.0.1"), kTcp, 1)) << "a released number matches nothing";
  compiler.delete_policy("a", "dev", "new");
  EXPECT_TRUE(decide_remote_egress(t, 303, 300, ip("10.1.0.1"), kTcp, 53));
  EXPECT_FALSE(decide_remote_egress(t, 303, 300, ip("10.1.0.1"), kTcp, 54));
}

}  // namespace
