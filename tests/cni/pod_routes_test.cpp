// cni/pod_routes: which routes ADD installs in the pod, in which order, and the service
// range's checks against the network's pod addresses.
#include <gtest/gtest.h>

#include "cni/pod_routes.hpp"

namespace vxfed::cni {
namespace {

net::Ipv4Prefix P(const char* text) { return *net::Ipv4Prefix::parse(text); }
net::Ipv4Addr A(const char* text) { return *net::Ipv4Addr::parse(text); }

std::vector<std::string> text(const std::vector<PodRoute>& routes) {
  std::vector<std::string> out;
  for (const auto& r : routes) out.push_back(r.dst.str() + " via " + r.gw.str());
  return out;
}

TEST(PodRoutes, TheServiceRangeGoesViaTheGatewayLikeTheRemoteClusters) {
  PodRouteSources s{P("10.244.0.0/16"), A("10.244.0.1"), {P("10.245.0.0/16")}, {P("10.96.0.0/24"), P("10.97.0.0/16")}, {}};
  EXPECT_EQ(text(plan_pod_routes(s)), (std::vector<std::string>{"10.244.0.0/16 via 10.244.0.1", "10.245.0.0/16 via 10.244.0.1",
                                                                "10.96.0.0/24 via 10.244.0.1", "10.97.0.0/16 via 10.244.0.1"}));
}

TEST(PodRoutes, WithoutServiceCidrsNothingChanges) {
  PodRouteSources s{P("10.244.0.0/16"), A("10.244.0.1"), {P("10.245.0.0/16")}, {}, {}};
  EXPECT_EQ(text(plan_pod_routes(s)), (std::vector<std::string>{"10.244.0.0/16 via 10.244.0.1", "10.245.0.0/16 via 10.244.0.1"}));
}

// The chained install: IPAM sends the default route to the node hop; the service range, more
// specific, still goes via the gateway into the dataplane (the kernel picks the longest match).
TEST(PodRoutes, TheChainedInstallsDefaultRouteStaysOnTheNodeHopBesideTheServiceRange) {
  PodRouteSources s{P("10.244.0.0/16"), A("10.244.0.1"), {P("10.245.0.0/16")}, {P("10.96.0.0/24")},
                    {{P("0.0.0.0/0"), A("169.254.118.1")}}};
  EXPECT_EQ(text(plan_pod_routes(s)), (std::vector<std::string>{"10.244.0.0/16 via 10.244.0.1", "10.245.0.0/16 via 10.244.0.1",
                                                                "10.96.0.0/24 via 10.244.0.1", "0.0.0.0/0 via 169.254.118.1"}));
}

// A destination is routed once: the service range over an IPAM route to the same prefix
// (through another gateway it would bypass the dataplane's translation).
TEST(PodRoutes, EachDestinationOnceTheServiceRangeBeforeIpam) {
  PodRouteSources s{P("10.244.0.0/16"), A("10.244.0.1"), {}, {P("10.96.0.0/24")},
                    {{P("10.96.0.0/24"), A("169.254.118.1")}, {P("10.244.0.0/16"), A("10.244.0.1")}}};
  EXPECT_EQ(text(plan_pod_routes(s)), (std::vector<std::string>{"10.244.0.0/16 via 10.244.0.1", "10.96.0.0/24 via 10.244.0.1"}));
}

TEST(PodRoutes, AServiceRangeHoldingPodAddressesIsRefusedNamingTheField) {
  const std::vector<net::Ipv4Prefix> remote{P("10.245.0.0/16")};
  EXPECT_FALSE(service_cidrs_problem(merge_service_cidrs({P("10.96.0.0/24")}, {}), P("10.244.0.0/16"), remote, "fed-a"));
  EXPECT_FALSE(service_cidrs_problem({}, P("10.244.0.0/16"), remote, "fed-a"));
  struct Case {
    std::vector<net::Ipv4Prefix> services;
    const char* expected;
  } cases[] = {
      {{P("10.244.5.0/24")}, "serviceCidrs[0]: 10.244.5.0/24 overlaps vxfed network \"fed-a\"'s subnet 10.244.0.0/16"},
      {{P("10.0.0.0/8")}, "serviceCidrs[0]: 10.0.0.0/8 overlaps vxfed network \"fed-a\"'s subnet 10.244.0.0/16"},
      {{P("10.96.0.0/24"), P("10.245.128.0/17")},
       "serviceCidrs[1]: 10.245.128.0/17 overlaps 10.245.0.0/16, another cluster's CIDR on vxfed network \"fed-a\""},
  };
  for (const auto& c : cases) {
    auto problem = service_cidrs_problem(merge_service_cidrs(c.services, {}), P("10.244.0.0/16"), remote, "fed-a");
    ASSERT_TRUE(problem) << c.expected;
    EXPECT_NE(problem->find(c.expected), std::string::npos) << *problem;
    EXPECT_NE(problem->find("services.range"), std::string::npos) << *problem;
  }
}

// vxfedd's range (GetNetwork service_cidrs) joins the config's: each destination once, the
// config's first, so a config that repeats the range keeps working and one without it gets it.
TEST(PodRoutes, VxfeddsServiceRangeMergedWithTheConfigsOnce) {
  const auto both = merge_service_cidrs({P("10.97.0.0/16"), P("10.96.0.0/24")}, {P("10.96.0.0/24")});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].field, "serviceCidrs[0]");
  EXPECT_EQ(both[1].field, "serviceCidrs[1]");
  const auto only_vxfedd = merge_service_cidrs({}, {P("10.96.0.0/24")});
  ASSERT_EQ(only_vxfedd.size(), 1u);
  EXPECT_EQ(only_vxfedd[0].prefix, P("10.96.0.0/24"));
  EXPECT_NE(only_vxfedd[0].field.find("vxfedd's service range"), std::string::npos) << only_vxfedd[0].field;
  const auto added = merge_service_cidrs({P("10.97.0.0/16")}, {P("10.96.0.0/24"), P("10.96.0.0/24")});
  EXPECT_EQ(prefixes_of(added), (std::vector<net::Ipv4Prefix>{P("10.97.0.0/16"), P("10.96.0.0/24")}));

  PodRouteSources s{P("10.244.0.0/16"), A("10.244.0.1"), {}, prefixes_of(added), {}};
  EXPECT_EQ(text(plan_pod_routes(s)), (std::vector<std::string>{"10.244.0.0/16 via 10.244.0.1", "10.97.0.0/16 via 10.244.0.1",
                                                                 "10.96.0.0/24 via 10.244.0.1"}));
}

// The overlap checks hold for vxfedd's range as for the config's, naming where it came from.
TEST(PodRoutes, VxfeddsServiceRangeHoldingPodAddressesIsRefusedNamingIt) {
  const std::vector<net::Ipv4Prefix> remote{P("10.245.0.0/16")};
  auto problem = service_cidrs_problem(merge_service_cidrs({}, {P("10.245.7.0/24")}), P("10.244.0.0/16"), remote, "fed-a");
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("vxfedd's service range (GetNetwork service_cidrs[0]): 10.245.7.0/24 overlaps 10.245.0.0/16"),
            std::string::npos)
      << *problem;
  EXPECT_NE(problem->find("v1/services/range"), std::string::npos) << *problem;
}

}  // namespace
}  // namespace vxfed::cni
