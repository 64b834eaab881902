#include "control/federation/store_access.hpp"

#include <utility>

namespace vxfed::control {

namespace fed = ::vxfed::federation;

fed::EtcdOptions etcd_options(const Config& config) {
  fed::EtcdOptions options;
  options.endpoints = config.federation.endpoints;
  options.ca_file = config.federation.ca_file;
  options.cert_file = config.federation.cert_file;
  options.key_file = config.federation.key_file;
  options.key_prefix = config.federation.key_prefix;
  options.request_timeout_ms = config.federation.request_timeout_ms;
  options.client_name = config.node.name;
  return options;
}

v1::ErrorCode api_code(fed::Code code) {
  switch (code) {
    case fed::Code::unavailable: return v1::UNAVAILABLE;
    case fed::Code::exhausted: return v1::EXHAUSTED;
    case fed::Code::conflict: return v1::ALREADY_EXISTS;
    case fed::Code::invalid: return v1::INVALID_ARGUMENT;
    case fed::Code::not_found: return v1::NOT_FOUND;
    case fed::Code::internal: return v1::INTERNAL;
  }
  return v1::INTERNAL;
}

v1::ControlResponse refused(v1::ErrorCode code, std::string error) {
  v1::ControlResponse response;
  response.set_code(code);
  response.set_error(std::move(error));
  return response;
}

}  // namespace vxfed::control
