// The name rules of the Kubernetes objects vxfed reads (labels, namespaces, object names),
// checked the way the API server checks them, so that what vxfedctl accepts is what a cluster
// could hold. Pure. Each check returns "" when the text is valid, else the reason, written to
// follow "'TEXT' " in an error ("must be at most 63 characters").
#pragma once

#include <string>
#include <string_view>

namespace vxfed::policy {

// A label key: an optional DNS subdomain prefix (at most 253) and '/', then a name of at most
// 63 characters of [A-Za-z0-9-_.] that starts and ends alphanumeric ("app",
// "app.kubernetes.io/name").
std::string check_label_key(std::string_view key);
// A label value: empty, or at most 63 characters of [A-Za-z0-9-_.] starting and ending
// alphanumeric.
std::string check_label_value(std::string_view value);
// A namespace name: a DNS label ([a-z0-9-], 1..63, alphanumeric at both ends).
std::string check_dns_label(std::string_view name);
// An object name (policy, pod, NAD): a DNS subdomain (DNS labels joined by '.', at most 253).
std::string check_dns_subdomain(std::string_view name);

}  // namespace vxfed::policy
