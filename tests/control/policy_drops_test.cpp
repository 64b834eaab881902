// Drops per policy (control/policy/policy_drops.hpp, docs/policy.md "Drops per policy"): the
// forwarder's refusals per pod attributed to the policies isolating the pod in that direction
// (each of them, when two do), what no local policy explains counted apart, moves between
// polls counted once, a forwarder restart counted from 0; the metrics page and vxfedctl's text.
#include <gtest/gtest.h>

#include <string>

#include "common/metrics/exposition.hpp"
#include "control/cli/policy_drops_text.hpp"
#include "control/policy/policy_drops.hpp"

namespace vxfed::control {
namespace {

using Key = PolicyDropLedger::Key;

// Network red: db-0 isolated for ingress by prod/db-in and prod/all-in, and for egress by
// prod/db-out; web-1 by nothing; an endpoint without a pod of the compile.
PolicyView view() {
  PolicyView v;
  auto& red = v.networks["red"];
  PolicyView::Local db;
  db.number = 257;
  db.namespace_name = "prod";
  db.ingress_isolated = db.egress_isolated = true;
  db.ingress_policies = {"prod/all-in", "prod/db-in"};
  db.egress_policies = {"prod/db-out"};
  PolicyView::Local web;
  web.number = 256;
  web.namespace_name = "prod";
  red.locals = {db, web};
  v.pods_by_endpoint["ep-db"] = {"red", "prod", "db-0", 0};
  v.pods_by_endpoint["ep-web"] = {"red", "prod", "web-1", 1};
  v.numbers[{"prod", "db-0"}] = 257;
  v.numbers[{"prod", "web-1"}] = 256;
  v.published["red"].vni = 1001;
  return v;
}

void set(dp::Counters& c, const std::string& endpoint, std::uint64_t egress, std::uint64_t ingress,
         std::uint64_t remote, std::uint64_t forged) {
  dp::PolicyEndpointDrops* d = nullptr;
  for (auto& e : *c.mutable_policy_drops())
    if (e.endpoint_id() == endpoint) d = &e;
  if (!d) {
    d = c.add_policy_drops();
    d->set_endpoint_id(endpoint);
    d->set_vni(1001);
    d->set_ip(endpoint == "ep-db" ? "10.244.1.10" : endpoint == "ep-web" ? "10.244.1.11" : "10.244.1.12");
  }
  d->set_denied_egress(egress);
  d->set_denied_ingress(ingress);
  d->set_denied_remote_egress(remote);
  d->set_forged_identity(forged);
}

TEST(PolicyDrops, EachRefusalCountsForEveryIsolatingPolicyOfItsPodAndDirection) {
  PolicyDropLedger ledger;
  const PolicyView v = view();
  dp::Counters c;
  set(c, "ep-db", 2, 3, 4, 1);
  set(c, "ep-web", 0, 5, 0, 0);
  set(c, "ep-other", 7, 0, 0, 0);
  ledger.update(v, c);
  const std::map<Key, std::uint64_t> want = {
      {{"prod/db-out", "egress", "policy_denied_egress"}, 2},
      {{"prod/all-in", "ingress", "policy_denied_ingress"}, 3},
      {{"prod/db-in", "ingress", "policy_denied_ingress"}, 3},
      {{"prod/all-in", "ingress", "policy_forged_identity"}, 1},
      {{"prod/db-in", "ingress", "policy_forged_identity"}, 1},
      // Not explained by a policy of the local pod: the remote source's egress; web-1 is not
      // ingress-isolated (as the view has it); an endpoint the view has no pod for.
      {{"", "egress", "policy_denied_remote_egress"}, 4},
      {{"", "ingress", "policy_denied_ingress"}, 5},
      {{"", "egress", "policy_denied_egress"}, 7},
  };
  EXPECT_EQ(ledger.by_policy(), want);
}

TEST(PolicyDrops, MovesAreCountedOnceAndAForwarderRestartFromZero) {
  PolicyDropLedger ledger;
  PolicyView v = view();
  dp::Counters c;
  set(c, "ep-db", 0, 3, 0, 0);
  ledger.update(v, c);
  ledger.update(v, c);  // nothing moved
  EXPECT_EQ(ledger.by_policy().at({"prod/db-in", "ingress", "policy_denied_ingress"}), 3u);
  // Two more, after db-in was deleted: they count for all-in only.
  v.networks["red"].locals[0].ingress_policies = {"prod/all-in"};
  set(c, "ep-db", 0, 5, 0, 0);
  ledger.update(v, c);
  EXPECT_EQ(ledger.by_policy().at({"prod/db-in", "ingress", "policy_denied_ingress"}), 3u);
  EXPECT_EQ(ledger.by_policy().at({"prod/all-in", "ingress", "policy_denied_ingress"}), 5u);
  // The forwarder restarted (its counts went down): what it has now is new.
  set(c, "ep-db", 0, 1, 0, 0);
  ledger.update(v, c);
  EXPECT_EQ(ledger.by_policy().at({"prod/all-in", "ingress", "policy_denied_ingress"}), 6u);
  // The pod gone and back (its port attached again, counted from 0 by the forwarder).
  ledger.update(v, dp::Counters{});
  set(c, "ep-db", 0, 2, 0, 0);
  ledger.update(v, c);
  EXPECT_EQ(ledger.by_policy().at({"prod/all-in", "ingress", "policy_denied_ingress"}), 8u);
}

TEST(PolicyDrops, ReportMetricsAndText) {
  PolicyDropLedger ledger;
  const PolicyView v = view();
  dp::Counters c;
  set(c, "ep-db", 0, 3, 1, 0);
  set(c, "ep-web", 0, 0, 0, 0);
  set(c, "ep-other", 0, 0, 0, 0);
  auto* w0 = c.add_workers();
  w0->set_policy_new_flows(10);
  w0->set_policy_allowed(6);
  w0->set_policy_denied(4);
  auto* w1 = c.add_workers();
  w1->set_policy_new_flows(1);
  w1->set_policy_allowed(1);
  for (const auto& [reason, n] : std::map<std::string, std::uint64_t>{
           {"policy_denied_ingress", 3}, {"policy_denied_remote_egress", 1}, {"no_route", 9}}) {
    auto* d = c.add_drops();
    d->set_reason(reason);
    d->set_packets(n);
  }
  ledger.update(v, c);
  const auto r = ledger.report(v, &c);
  EXPECT_TRUE(r.have_counters());
  EXPECT_EQ(r.flows_decided(), 11u);
  EXPECT_EQ(r.flows_allowed(), 7u);
  EXPECT_EQ(r.flows_denied(), 4u);
  EXPECT_EQ(r.reasons().size(), 2u) << "the policy_* reasons only";
  ASSERT_EQ(r.pods_size(), 2) << "the pods of the network with an entry; not the endpoint without a pod";
  EXPECT_EQ(r.pods(0).name(), "db-0");
  EXPECT_EQ(r.pods(0).identity(), 257u);
  EXPECT_EQ(r.pods(0).ingress_policies_size(), 2);
  EXPECT_EQ(r.pods(0).denied_ingress(), 3u);

  const std::string page = render_policy_drop_metrics(r);
  EXPECT_NE(page.find("vxfedd_policy_drops_total{policy=\"prod/db-in\",direction=\"ingress\","
                      "reason=\"policy_denied_ingress\"} 3\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("vxfedd_policy_drops_total{policy=\"prod/all-in\",direction=\"ingress\","
                      "reason=\"policy_denied_ingress\"} 3\n"),
            std::string::npos);
  EXPECT_NE(page.find("vxfedd_policy_drops_unattributed_total{direction=\"egress\","
                      "reason=\"policy_denied_remote_egress\"} 1\n"),
            std::string::npos);
  EXPECT_NE(page.find("vxfedd_policy_pod_drops_total{network=\"red\",namespace=\"prod\",pod=\"web-1\","
                      "reason=\"policy_forged_identity\"} 0\n"),
            std::string::npos);
  EXPECT_EQ(page.find("policy=\"\""), std::string::npos) << "the unattributed ones have a family of their own";

  const std::string text = format_policy_drops(r);
  EXPECT_NE(text.find("forwarder on this node: 11 new flows decided, 7 allowed, 4 denied "
                      "(policy_denied_ingress 3, policy_denied_remote_egress 1)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("prod/db-in   ingress    policy_denied_ingress        3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("(none)       egress     policy_denied_remote_egress  1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("red      prod       db-0   10.244.1.10  257       0       3        1              0       "
                      "prod/all-in,prod/db-in  prod/db-out\n"),
            std::string::npos)
      << text;

  // Before the forwarder's first counters: no pods, and the text says so.
  const auto none = PolicyDropLedger{}.report(v, nullptr);
  EXPECT_FALSE(none.have_counters());
  EXPECT_EQ(none.pods_size(), 0);
  EXPECT_NE(format_policy_drops(none).find("no counters from the forwarder yet"), std::string::npos);
}

}  // namespace
}  // namespace vxfed::control
