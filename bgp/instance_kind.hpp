// Which BGP instance a running bgpd holds, read from its `show running-config`: the default
// instance (`router bgp ASN`), the view vxfed renders for the BMP feed (`router bgp ASN view
// NAME`), or none (a bgpd that has not been configured yet).
//
// A node moving from the FPM feed to the BMP feed (docs/bgp.md, "Moving a running node from
// FPM to BMP") must not turn its running default instance into the view in place: deleting
// the instance sends every peer a Cease (a hard reset under RFC 8538), and the reflector
// withdraws the node's blocks. The adapter reads the kind before each apply and, while bgpd
// still runs the default instance, serves the BMP feed from it.
#pragma once

#include <string_view>

namespace vxfed::bgp {

enum class BgpInstanceKind { kNone, kDefault, kView };

BgpInstanceKind running_instance_kind(std::string_view running_config);

const char* to_string(BgpInstanceKind kind);

}  // namespace vxfed::bgp
