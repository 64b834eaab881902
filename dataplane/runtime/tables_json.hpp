// Reading tables from JSON (protobuf's JSON mapping of proto/dataplane.proto), shared by
// vxfed-dataplane --tables-file and vxfed-dpctl. A file may hold a Snapshot
// ({"generation": 7, "tables": {...}}) or a bare Tables object ({"networks": [...], ...}).
#pragma once

#include <string>

#include "proto/dataplane.pb.h"
#include "common/result.hpp"

namespace vxfed::dataplane {

Result<v1::Snapshot> snapshot_from_json(const std::string& json);
Result<v1::Snapshot> snapshot_from_file(const std::string& path);
Result<v1::Delta> delta_from_file(const std::string& path);
std::string to_json(const google::protobuf::Message& message);

}  // namespace vxfed::dataplane
