// A TablesSink for vxfedd's unit tests: always ready, takes every endpoint, refuses nothing, and
// records each delta as the dataplane receives it (to_wire), for the test to read or replay.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "control/node/node_state.hpp"

namespace vxfed::control::testing {

class RecordingSink : public TablesSink {
 public:
  void publish(const TablesDelta& delta) override { deltas.push_back(to_wire(delta)); }
  bool ready() const override { return true; }
  bool carries(const ::vxfed::dataplane::v1::Endpoint&) const override { return true; }
  std::optional<std::string> refusal(const std::string&) const override { return std::nullopt; }
  std::vector<::vxfed::dataplane::v1::Delta> deltas;
};

}  // namespace vxfed::control::testing
