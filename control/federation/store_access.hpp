// What every part of vxfedd that calls the federation store shares (FederationLink, PolicyApi,
// ServiceApi): the etcd client's options from vxfedd's config, the store's error codes as the
// API's, and a refusal as the API answers it.
#pragma once

#include <string>

#include "control/daemon/daemon_config.hpp"
#include "federation/etcd_client.hpp"
#include "proto/control.pb.h"

namespace vxfed::control {

// Endpoints, TLS files, key prefix, request timeout and the node's name (the nodes spread over
// the members by it: docs/federation.md, "The client"). Callers add what is theirs alone.
federation::EtcdOptions etcd_options(const Config& config);

v1::ErrorCode api_code(federation::Code code);

v1::ControlResponse refused(v1::ErrorCode code, std::string error);

}  // namespace vxfed::control
