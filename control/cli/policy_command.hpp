// vxfedctl policy apply | delete | get | drops: network policy in the federation store, through
// vxfedd (docs/policy.md, "Applying policy"), and the refusals per policy on this node ("Drops
// per policy"). vxfedctl only reads the file and sends its text; vxfedd parses it (policy/), so
// what is accepted is decided in one place, for this node's cluster.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>
#include <google/protobuf/message.h>
#include <nlohmann/json.hpp>

#include "proto/control.pb.h"

namespace vxfed::control {

// What the subcommands borrow from vxfedctl_main.cpp: its call (prints the error and sets the
// exit code), its JSON rendering and its --json/--check handling.
struct PolicyCommandContext {
  std::function<bool(v1::ControlRequest&, v1::ControlResponse&, int& exit)> call;
  std::function<nlohmann::json(const google::protobuf::Message&)> to_json;
  std::function<int(const std::string& command)> check_only;
  const bool* json = nullptr;
  const bool* check = nullptr;
  int* result = nullptr;
  int usage_exit = 2;  // a file that cannot be read, a kind not known
};

void add_policy_command(CLI::App& app, PolicyCommandContext context);

}  // namespace vxfed::control
