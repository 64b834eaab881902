// The global-service families of vxfedd's metrics page (control/metrics/metrics_services.cpp):
// what a node serving services shows, written without breaking the exposition rules.
#include <gtest/gtest.h>

#include <string>

#include "control/metrics/metrics_text.hpp"

namespace vc = vxfed::control;

TEST(ServiceMetrics, PerServiceBackendsByStateAndAllowed) {
  vc::ServiceFigures f;
  f.listings = 4;
  f.list_failures = 1;
  f.compiles = 9;
  f.watching = true;
  f.services.push_back({"default/web", true, 1, 2, 1, 1});
  f.services.push_back({"default/idle", false, 0, 0, 0, 0});
  vxfed::metrics::Exposition w;
  vc::render_service_metrics(w, f);
  for (const auto& e : w.errors()) ADD_FAILURE() << e;
  const std::string text = w.take();
  for (const char* line : {
           "vxfedd_services{state=\"programmed\"} 1\n",
           "vxfedd_services{state=\"not_programmed\"} 1\n",
           "vxfedd_service_backends_allowed{service=\"default/web\"} 1\n",
           "vxfedd_service_backends_allowed{service=\"default/idle\"} 0\n",
           "vxfedd_service_backends{service=\"default/web\",state=\"ready\"} 2\n",
           "vxfedd_service_backends{service=\"default/web\",state=\"not_ready\"} 1\n",
           "vxfedd_service_backends{service=\"default/web\",state=\"node_down\"} 1\n",
           "vxfedd_services_watching 1\n",
           "vxfedd_services_listings_total 4\n",
           "vxfedd_services_list_failures_total 1\n",
           "vxfedd_service_compiles_total 9\n",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "not in:\n" << text;
}

TEST(ServiceMetrics, OnlyWithServicesConfigured) {
  vc::MetricsInput in;
  in.version = "test";
  EXPECT_EQ(vc::render_metrics(in).find("vxfedd_services"), std::string::npos);
  in.services = vc::ServiceFigures{};
  EXPECT_NE(vc::render_metrics(in).find("vxfedd_services{state=\"programmed\"} 0"), std::string::npos);
}

TEST(ServiceMetrics, FlowsPerBackendOnlyOnceTheForwarderAnswered) {
  vc::ServiceFigures f;
  f.services.push_back({"default/web", true, 2, 2, 0, 0});
  {
    vxfed::metrics::Exposition w;
    vc::render_service_metrics(w, f);
    EXPECT_EQ(w.take().find("vxfedd_service_backend_flows"), std::string::npos);
  }
  f.have_flows = true;
  f.backend_flows.push_back({"default/web", "cluster-a", "10.244.0.5", 17, 5002});
  f.backend_flows.push_back({"default/web", "cluster-b", "10.245.0.7", 0, 0});
  vxfed::metrics::Exposition w;
  vc::render_service_metrics(w, f);
  for (const auto& e : w.errors()) ADD_FAILURE() << e;
  const std::string text = w.take();
  for (const char* line : {
           "# TYPE vxfedd_service_backend_flows gauge\n",
           "vxfedd_service_backend_flows{service=\"default/web\",cluster=\"cluster-a\",backend=\"10.244.0.5\"} 17\n",
           "vxfedd_service_backend_flows{service=\"default/web\",cluster=\"cluster-b\",backend=\"10.245.0.7\"} 0\n",
           "# TYPE vxfedd_service_backend_new_flows_total counter\n",
           "vxfedd_service_backend_new_flows_total{service=\"default/web\",cluster=\"cluster-a\",backend=\"10.244.0.5\"} 5002\n",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "not in:\n" << text;
}
