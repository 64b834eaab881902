// The six CNI commands. Each takes the parsed config and environment and returns the JSON to
// print on stdout (null: print nothing) or a CniError; main.cpp does the I/O around them.
#pragma once

#include <nlohmann/json.hpp>

#include "cni/env.hpp"
#include "cni/errors.hpp"
#include "cni/netconf.hpp"

namespace vxfed::cni {

Expected<nlohmann::json> cmd_add(const NetConf& conf, const CniEnv& env);
Expected<nlohmann::json> cmd_del(const NetConf& conf, const CniEnv& env);
Expected<nlohmann::json> cmd_check(const NetConf& conf, const CniEnv& env);
Expected<nlohmann::json> cmd_gc(const NetConf& conf, const CniEnv& env);
Expected<nlohmann::json> cmd_status(const NetConf& conf, const CniEnv& env);

}  // namespace vxfed::cni
