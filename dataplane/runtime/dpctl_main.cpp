// vxfed-dpctl: a small client of vxfed-dataplane's table API, for people, tests and demos.
//   vxfed-dpctl --socket S status | counters | dump | services [--json]
//   vxfed-dpctl --socket S snapshot FILE.json [FILE2.json ...] [--generation N] [--repeat K]
//     (several files and/or --repeat: sent back to back on one connection, cycling through
//      the files, generations N, N+1, ...: for table-churn tests)
//   vxfed-dpctl --socket S delta FILE.json
//   vxfed-dpctl --socket S capture --port uplink|IFACE --out FILE.pcap [--count N] [--seconds S] ...
//     (capture_client.hpp: a pcap of one port's packets as the forwarder sees them)
// Prints the DataplaneResponse as JSON (proto field names); exits 1 when ok is false.
#include <chrono>
#include <cstdio>
#include <vector>
#include <iostream>

#include <CLI/CLI.hpp>

#include "common/cpu_baseline.h"
#include "proto/dataplane.pb.h"
#include "common/delimited.hpp"
#include "dataplane/runtime/capture_client.hpp"
#include "dataplane/runtime/policy_summary.hpp"
#include "dataplane/runtime/service_counters_text.hpp"
#include "dataplane/runtime/tables_json.hpp"

using namespace vxfed;
namespace v1 = vxfed::dataplane::v1;

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline(argv[0]);  // before anything that may use the baseline's instructions
  CLI::App app("vxfed-dpctl: talk to vxfed-dataplane's table API (proto/dataplane.proto)");
  std::string socket_path;
  int timeout_ms = 10000;
  app.add_option("--socket", socket_path, "the dataplane's --api-socket")->required();
  app.add_option("--timeout-ms", timeout_ms, "per call")->capture_default_str();
  app.require_subcommand(1);
  auto* status = app.add_subcommand("status", "GetStatus");
  auto* counters = app.add_subcommand("counters", "GetCounters: ports/queues, VNIs, drop reasons");
  auto* dump = app.add_subcommand("dump", "DumpTables: the tables the workers use now");
  auto* services = app.add_subcommand(
      "services", "GetServiceCounters: per global service and backend, new flows and the flows live now");
  bool services_json = false;
  services->add_flag("--json", services_json, "the DataplaneResponse as JSON instead of the table");
  auto* snapshot = app.add_subcommand("snapshot", "send a Snapshot read from a JSON file");
  std::string file;
  std::vector<std::string> files;
  std::uint64_t generation = 0;
  unsigned repeat = 1;
  snapshot->add_option("files", files, "Snapshot or Tables in protobuf JSON")->required();
  snapshot->add_option("--generation", generation, "overrides the file's generation (then +1 per send)");
  snapshot->add_option("--repeat", repeat, "sends this many snapshots, cycling through the files")
      ->capture_default_str();
  auto* delta = app.add_subcommand("delta", "send a Delta read from a JSON file");
  delta->add_option("file", file, "Delta in protobuf JSON")->required();
  auto* capture = app.add_subcommand(
      "capture", "write a pcap of one port's packets as the forwarder sees them (received: before the pipeline; "
                 "sent: as handed to the port, super-packets whole); ends at the first limit or on Ctrl-C");
  dataplane::CaptureRequestOptions cap;
  capture->add_option("--port", cap.port, "\"uplink\" or a pod's host-side interface (vxfedctl endpoints)")->required();
  capture->add_option("--out", cap.out, "pcap file to write, - for standard output")->required();
  capture->add_option("--count", cap.count, "stop after this many packets (0: the dataplane's default, 1000)");
  capture->add_option("--seconds", cap.seconds, "stop after this long (0: the dataplane's default, 10; at most 3600)");
  capture->add_option("--max-bytes", cap.max_bytes, "stop after this many bytes kept (0: 64 MiB)");
  capture->add_option("--snaplen", cap.snaplen, "bytes kept of each packet (0: 9216; 64 .. 65535)");
  capture->add_option("--ring-kib", cap.ring_kib, "each worker's capture ring (0: 4096; 64 .. 65536)");
  capture->add_option("--direction", cap.direction, "both, received or sent")->capture_default_str();
  capture->add_option("--interval-ms", cap.interval_ms, "how often the rings are emptied")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (capture->parsed()) {
    // A capture outlives the per-call timeout: each exchange has it, the whole run has its limits.
    auto cfd = connect_unix(socket_path, timeout_ms);
    if (!cfd) {
      std::cerr << "vxfed-dpctl: " << cfd.error() << "\n";
      return 2;
    }
    return dataplane::run_capture(*cfd, cap, timeout_ms);
  }

  v1::DataplaneRequest request;
  request.set_request_id(1);
  if (status->parsed()) request.mutable_get_status();
  if (counters->parsed()) request.mutable_get_counters();
  if (dump->parsed()) request.mutable_dump_tables();
  if (services->parsed()) request.mutable_get_service_counters();
  std::vector<v1::Snapshot> snapshots;
  if (snapshot->parsed()) {
    for (const auto& f : files) {
      auto s = dataplane::snapshot_from_file(f);
      if (!s) {
        std::cerr << "vxfed-dpctl: " << s.error() << "\n";
        return 2;
      }
      snapshots.push_back(*s);
    }
    if (generation != 0) snapshots[0].set_generation(generation);
    *request.mutable_snapshot() = snapshots[0];
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
  const auto started = std::chrono::steady_clock::now();
  for (unsigned i = 1; i < repeat && response.ok(); ++i) {
    request.set_request_id(i + 1);
    *request.mutable_snapshot() = snapshots[i % snapshots.size()];
    if (generation != 0) request.mutable_snapshot()->set_generation(generation + i);
    if (auto st = write_delimited(*fd, request, timeout_ms); !st) {
      std::cerr << "vxfed-dpctl: send: " << st.error() << "\n";
      return 2;
    }
    if (auto st = read_delimited(*fd, response, timeout_ms, 256u << 20); !st) {
      std::cerr << "vxfed-dpctl: receive: " << st.error() << "\n";
      return 2;
    }
  }
  if (repeat > 1) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    std::cerr << "vxfed-dpctl: " << repeat << " snapshots applied, the last " << (repeat - 1)
              << " in " << ms << " ms\n";
  }
  if (services->parsed() && response.has_service_counters() && !services_json)
    std::cout << dataplane::service_counters_text(response.service_counters());
  else if (dump->parsed() && response.has_tables())
    std::cout << dataplane::with_policy_summary(dataplane::to_json(response), response.tables().tables());
  else
    std::cout << dataplane::to_json(response);
  if (!response.ok()) {
    std::cerr << "vxfed-dpctl: refused: " << response.error() << "\n";
    return 1;
  }
  return 0;
}
