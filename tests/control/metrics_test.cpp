// vxfedd's metrics page: every part's families follow the naming rules (the writer reports
// none broken), each family appears once, and the series counts at the sizes the docs quote
// (250 pods, 2,000 VNIs) are what docs/metrics.md says.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "control/metrics/metrics_text.hpp"
#include "control/metrics/tcp_counters.hpp"

namespace vc = vxfed::control;
namespace dpv1 = vxfed::dataplane::v1;

namespace {

constexpr int kPods = 250, kVnis = 2000, kWorkers = 2, kPeers = 2;

vc::MetricsInput big_node(vc::ApiCounters& api, vxfed::metrics::Histogram& store) {
  vc::MetricsInput in;
  in.version = "test";
  in.api = &api;
  in.stores = {{"vnis", &store}, {"networks", &store}, {"endpoints", &store}};
  in.pools = {{"default", 1000, 10, 2, 1}};
  in.have_counters = true;
  auto& c = in.counters;
  auto add_port = [&](const std::string& name) {
    for (int q = 0; q < kWorkers; ++q) {
      auto* p = c.add_ports();
      p->set_name(name);
      p->set_queue(q);
      p->set_rx_packets(1);
    }
  };
  add_port("uplink");
  add_port("pods");
  for (int i = 0; i < kPods; ++i) add_port("veth" + std::to_string(i));
  for (int v = 1; v <= kVnis + 100; ++v) {  // 100 VNIs the node no longer has: left out
    c.add_vnis()->set_vni(v);
    if (v <= kVnis) in.vnis_of_networks.insert(v);
  }
  for (const char* r : {"truncated", "no_route", "unknown_vtep"}) c.add_drops()->set_reason(r);
  for (int w = 0; w < kWorkers; ++w) c.add_workers()->set_worker(w);
  c.mutable_tables()->set_routes(5);
  auto* h = c.mutable_table_update_seconds();
  h->add_upper_bounds(0.1);
  h->add_bucket_counts(1);
  h->add_bucket_counts(0);
  h->set_count(1);
  vc::BgpFigures bgp;
  for (int i = 0; i < kPeers; ++i) {
    vxfed::bgp::PeerStatus p;
    p.address = "198.18.0." + std::to_string(i + 2);
    p.cluster = "cluster-b";
    p.state = i == 0 ? "Established" : "Active";
    bgp.peers.push_back(p);
  }
  in.bgp = bgp;
  in.bpf_enabled = true;
  for (int i = 0; i < kPods; ++i) {
    vc::PodBpfFigures pod{"fed", "default", "pod-" + std::to_string(i), "net1", {}};
    pod.counters.classes = {{"roce", 1, 2}, {"unmatched", 3, 4}};
    for (const char* s : {"egress_passed", "egress_delayed", "egress_dropped_horizon", "ingress_passed",
                          "ingress_dropped_rate", "egress_dropped_rate", "marked", "not_ipv4", "malformed", "fragment"})
      pod.counters.stats[s] = 1;
    in.pods.push_back(std::move(pod));
  }
  return in;
}

// Series (sample lines) per family name, from the text.
std::map<std::string, int> series_per_family(const std::string& text, int* families) {
  std::map<std::string, int> out;
  std::istringstream lines(text);
  std::string line, family;
  *families = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(out.count(family), 0u) << family << " declared twice";
      out[family] = 0;
      ++*families;
    } else if (!line.empty() && line[0] != '#') {
      EXPECT_EQ(line.rfind(family, 0), 0u) << line << " outside its family " << family;
      ++out[family];
    }
  }
  return out;
}

}  // namespace

TEST(Metrics, EveryPartFollowsTheRules) {
  vc::ApiCounters api;
  api.by_op["attach_endpoint"].by_code[0] = 3;
  api.by_op["attach_endpoint"].by_code[3] = 1;
  api.by_op["get_status"];
  vxfed::metrics::Histogram store;
  store.observe(0.0004);
  const auto in = big_node(api, store);
  vxfed::metrics::Exposition w;
  vc::render_vxfedd_metrics(w, in);
  vc::render_dataplane_metrics(w, in);
  vc::render_bgp_metrics(w, *in.bgp);
  vc::render_bpf_metrics(w, in);
  for (const auto& e : w.errors()) ADD_FAILURE() << e;
  int families = 0;
  const auto series = series_per_family(w.take(), &families);
  EXPECT_GT(families, 60);

  // Per port and queue: (uplink + pods + 250 pods) x 2 workers, for each of 6 families.
  EXPECT_EQ(series.at("vxfed_dataplane_port_rx_packets_total"), (2 + kPods) * kWorkers);
  // Per VNI: the node's 2,000 networks only, not the 100 gone ones.
  EXPECT_EQ(series.at("vxfed_dataplane_vni_encap_packets_total"), kVnis);
  // Per pod: 10 outcomes, 2 classes.
  EXPECT_EQ(series.at("vxfed_bpf_pod_packets_total"), kPods * 10);
  EXPECT_EQ(series.at("vxfed_bpf_pod_class_packets_total"), kPods * 2);
  // Per worker: the services' and policy's flow counters.
  EXPECT_EQ(series.at("vxfed_dataplane_policy_flows_denied_total"), kWorkers);
  EXPECT_EQ(series.at("vxfed_dataplane_service_new_flows_total"), kWorkers);
  // Per peer: 9 states.
  EXPECT_EQ(series.at("vxfed_bgp_peer_state"), kPeers * 9);
  // API: ok for every op, other codes once seen.
  EXPECT_EQ(series.at("vxfedd_api_requests_total"), 3);
  EXPECT_EQ(series.at("vxfedd_api_request_duration_seconds"), 2 * (16 + 1 + 2));
  EXPECT_EQ(series.at("vxfedd_store_write_duration_seconds"), 3 * (16 + 1 + 2));
  int total = 0;
  for (const auto& [name, n] : series) total += n;
  // 6 x 504 port series + 6 x 2,000 VNI series + 250 x 14 pod series + the rest.
  EXPECT_LT(total, 6 * 504 + 6 * kVnis + kPods * 14 + 400) << total;
  std::cout << "series at 250 pods, 2000 VNIs, 2 workers, 2 peers: " << total << "\n";
}

TEST(Metrics, PerVniSeriesCanBeTurnedOff) {
  vc::ApiCounters api;
  vxfed::metrics::Histogram store;
  auto in = big_node(api, store);
  in.per_vni = false;
  vxfed::metrics::Exposition w;
  vc::render_dataplane_metrics(w, in);
  EXPECT_TRUE(w.errors().empty());
  EXPECT_EQ(w.take().find("vxfed_dataplane_vni_"), std::string::npos);
}

TEST(Metrics, PeerStateIsOneOfAFixedSet) {
  vc::BgpFigures bgp;
  vxfed::bgp::PeerStatus p;
  p.address = "198.18.0.2";
  p.state = "SomethingFrrInvented";
  bgp.peers.push_back(p);
  vxfed::metrics::Exposition w;
  vc::render_bgp_metrics(w, bgp);
  const auto text = w.take();
  EXPECT_NE(text.find("vxfed_bgp_peer_state{peer=\"198.18.0.2\",cluster=\"\",session=\"ebgp\",state=\"Unknown\"} 1"), std::string::npos);
  EXPECT_EQ(text.find("SomethingFrrInvented"), std::string::npos);
  EXPECT_NE(text.find("vxfed_bgp_peer_up{peer=\"198.18.0.2\",cluster=\"\",session=\"ebgp\"} 0"), std::string::npos);
}

// Issue 37: a reflector's series had cluster="" and nothing told iBGP from eBGP; FRR's
// refusals and max-prefix teardowns were not in the metrics at all.
TEST(Metrics, PeerSeriesSayTheSessionAndFrrsRefusals) {
  vc::BgpFigures bgp;
  vxfed::bgp::PeerStatus rr;
  rr.address = "198.18.0.10";
  rr.cluster = "cluster-a";
  rr.ibgp = true;
  rr.state = "Established";
  vxfed::bgp::PeerStatus b;
  b.address = "198.18.0.2";
  b.cluster = "cluster-b";
  b.state = "Idle";
  b.prefixes_denied = 6;
  b.max_prefix_overflow = true;
  b.max_prefix_teardowns = 2;
  bgp.peers = {rr, b};
  vxfed::metrics::Exposition w;
  vc::render_bgp_metrics(w, bgp);
  for (const auto& e : w.errors()) ADD_FAILURE() << e;
  const auto text = w.take();
  for (const char* line : {
           "vxfed_bgp_peer_up{peer=\"198.18.0.10\",cluster=\"cluster-a\",session=\"ibgp\"} 1",
           "vxfed_bgp_peer_up{peer=\"198.18.0.2\",cluster=\"cluster-b\",session=\"ebgp\"} 0",
           "vxfed_bgp_peer_prefixes_denied_total{peer=\"198.18.0.2\",cluster=\"cluster-b\",session=\"ebgp\"} 6",
           "vxfed_bgp_peer_prefixes_denied_total{peer=\"198.18.0.10\",cluster=\"cluster-a\",session=\"ibgp\"} 0",
           "vxfed_bgp_peer_max_prefix_exceeded{peer=\"198.18.0.2\",cluster=\"cluster-b\",session=\"ebgp\"} 1",
           "vxfed_bgp_peer_max_prefix_teardowns_total{peer=\"198.18.0.2\",cluster=\"cluster-b\",session=\"ebgp\"} 2",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(TcpCounters, Md5CountersFromProcNetNetstat) {
  const auto m = vc::parse_tcp_ext(
      "TcpExt: SyncookiesSent TCPMD5NotFound TCPMD5Unexpected TCPMD5Failure\n"
      "TcpExt: 0 4 5 17\n"
      "IpExt: InNoRoutes InTruncatedPkts\n"
      "IpExt: 0 0\n");
  EXPECT_EQ(m.at("TCPMD5NotFound"), 4u);
  EXPECT_EQ(m.at("TCPMD5Unexpected"), 5u);
  EXPECT_EQ(m.at("TCPMD5Failure"), 17u);
  EXPECT_EQ(m.count("InNoRoutes"), 0u);
  EXPECT_TRUE(vc::parse_tcp_ext("garbage\nTcpExt: A B\nTcpExt: 1 x\n").size() == 1);
}
