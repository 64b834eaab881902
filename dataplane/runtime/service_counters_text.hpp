// vxfed-dpctl services: the forwarder's view of its global services per service and backend
// (GetServiceCounters, proto/dataplane.proto), as a table for people.
#pragma once

#include <string>

#include "proto/dataplane.pb.h"

namespace vxfed::dataplane {

// One line per (service, backend):
//   SERVICE  VNI  VIP:PORTS  BACKEND:PORTS  IN-ENTRY  WEIGHT  NEW-FLOWS  FLOWS
// then a line with what the census could not attribute or did not count.
std::string service_counters_text(const v1::ServiceCountersReport& report);

}  // namespace vxfed::dataplane
