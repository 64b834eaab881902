// Checks a parsed apply (services/parse.hpp) against itself and against the federation, so
// that what is accepted can be served: every EndpointSlice belongs to a Service of the input
// and has exactly its ports, every backend address lies in its cluster's pod CIDRs, a pinned
// VIP lies in the service range, the strategy names clusters the federation has. Same error
// format as the parser ("SOURCE: KIND NAMESPACE/NAME: PATH: REASON"); any error refuses the
// whole apply.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"
#include "services/model.hpp"

namespace vxfed::services {

struct FederationView {
  // Every cluster of the federation with its pod CIDRs on the service's network.
  std::map<std::string, std::vector<net::Ipv4Prefix>> cluster_cidrs;
  net::Ipv4Prefix service_range;  // where VIPs come from (services/vip_pool.hpp)
};

std::vector<std::string> validate(const Objects& objects, const FederationView& federation, const std::string& source);

// read_objects() then validate(): the objects, or every error joined by '\n'.
Result<Objects> parse_and_validate(const std::string& text, const std::string& cluster, const FederationView& federation,
                                   const std::string& source);

}  // namespace vxfed::services
