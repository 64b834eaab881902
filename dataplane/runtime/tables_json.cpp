#include "dataplane/runtime/tables_json.hpp"

#include <google/protobuf/util/json_util.h>

#include "common/read_file.hpp"

namespace vxfed::dataplane {

Result<v1::Snapshot> snapshot_from_json(const std::string& json) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  v1::Snapshot snapshot;
  const auto as_snapshot = google::protobuf::util::JsonStringToMessage(json, &snapshot, opts);
  if (as_snapshot.ok()) return snapshot;
  v1::Tables tables;
  const auto as_tables = google::protobuf::util::JsonStringToMessage(json, &tables, opts);
  if (as_tables.ok()) {
    snapshot.Clear();
    *snapshot.mutable_tables() = tables;
    return snapshot;
  }
  return make_error("not a Snapshot (" + std::string(as_snapshot.message()) + ") nor a Tables (" +
                    std::string(as_tables.message()) + ") in protobuf JSON");
}

Result<v1::Snapshot> snapshot_from_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return make_error(text.error().message());
  auto s = snapshot_from_json(*text);
  if (!s) return make_error(path + ": " + s.error());
  return s;
}

Result<v1::Delta> delta_from_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return make_error(text.error().message());
  v1::Delta delta;
  const auto st = google::protobuf::util::JsonStringToMessage(*text, &delta);
  if (!st.ok()) return make_error(path + ": not a Delta in protobuf JSON: " + std::string(st.message()));
  return delta;
}

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, opts);
  return out;
}

}  // namespace vxfed::dataplane
