// vxfed-dpctl: a small client of vxfed-dataplane's table API, for people, tests and demos.
//   vxfed-dpctl --socket S status | counters | dump
//   vxfed-dpctl --socket S snapshot FILE.json [--generation N]
//   vxfed-dpctl --socket S delta FILE.json
// Prints the DataplaneResponse as JSON (proto field names); exits 1 when ok is false.
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "dataplane.pb.h"
#include "delimited.hpp"
#include "tables_json.hpp"

using namespace vxfed;
namespace v1 = vxfed::dataplane::v1;

int main(int argc, char** argv) {
  CLI::App app("vxfed-dpctl: talk to vxfed-dataplane's table API (proto/dataplane.proto)");
  std::string socket_path;
  int timeout_ms = 10000;
  app.add_option("--socket", socket_path, "the dataplane's --api-socket")->required();
  app.add_option("--timeout-ms", timeout_ms, "per call")->capture_default_str();
  app.require_subcommand(1);
  auto* status = app.add_subcommand("status", "GetStatus");
  auto* counters = app.add_subcommand("counters", "GetCounters: ports/queues, VNIs, drop reasons");
  auto* dump = app.add_subcommand("dump", "DumpTables: the tables the workers use now");
  auto* snapshot = app.add_subcommand("snapshot", "send a Snapshot read from a JSON file");
  std::string file;
  std::uint64_t generation = 0;
  snapshot->add_option("file", file, "Snapshot or Tables in protobuf JSON")->required();
  snapshot->add_option("--generation", generation, "overrides the file's generation");
  auto* delta = app.add_subcommand("delta", "send a Delta read from a JSON file");
  delta->add_option("file", file, "Delta in protobuf JSON")->required();
  CLI11_PARSE(app, argc, argv);

  v1::DataplaneRequest request;
  request.set_request_id(1);
  if (status->parsed()) request.mutable_get_status();
  if (counters->parsed()) request.mutable_get_counters();
  if (dump->parsed()) request.mutable_dump_tables();
  if (snapshot->parsed()) {
    auto s = dataplane::snapshot_from_file(file);
    if (!s) {
      std::cerr << "vxfed-dpctl: " << s.error() << "\n";
      return 2;
    }
    if (generation != 0) s->set_generation(generation);
    *request.mutable_snapshot() = *s;
  }
  if (delta->parsed()) {
    auto d = dataplane::delta_from_file(file);
    if (!d) {
      std::cerr << "vxfed-dpctl: " << d.error() << "\n";
      return 2;
    }
    *request.mutable_delta() = *d;
  }
  auto fd = connect_unix(socket_path, timeout_ms);
  if (!fd) {
    std::cerr << "vxfed-dpctl: " << fd.error() << "\n";
    return 2;
  }
  if (auto st = write_delimited(*fd, request, timeout_ms); !st) {
    std::cerr << "vxfed-dpctl: send: " << st.error() << "\n";
    return 2;
  }
  v1::DataplaneResponse response;
  if (auto st = read_delimited(*fd, response, timeout_ms, 256u << 20); !st) {
    std::cerr << "vxfed-dpctl: receive: " << st.error() << "\n";
    return 2;
  }
  std::cout << dataplane::to_json(response);
  if (!response.ok()) {
    std::cerr << "vxfed-dpctl: refused: " << response.error() << "\n";
    return 1;
  }
  return 0;
}
