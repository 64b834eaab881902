// Names vxfedd gives to things people create (networks, VNI pools, the cluster). Pure.
#pragma once

#include <string>

namespace vxfed::control {

// DNS-label names: [a-z0-9-], 1..63, no leading or trailing '-', so a name is usable as a
// Kubernetes object name, a file name in the state directory and a metrics label alike.
bool is_dns_label(const std::string& text);

}  // namespace vxfed::control
