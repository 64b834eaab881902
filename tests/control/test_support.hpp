// Helpers shared by vxfedd's unit tests: temp dirs, a config, a blocking API client.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "proto/control.pb.h"
#include "control/daemon/daemon_config.hpp"
#include "common/delimited.hpp"

namespace vxfed::control::testing {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/vxfed-ctl-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

inline Config test_config(const std::string& state_dir, const std::string& extra_networks = "") {
  const std::string yaml = R"(
node: {name: node-a1, vtep_ip: 198.18.0.1}
cluster: {name: cluster-a, pod_cidrs: [10.244.0.0/16]}
vni:
  hold_down_seconds: 60
  pools: [{name: federation, ranges: ["1000-2000"]}]
networks:
  - name: red
    subnet: 10.244.1.0/24
    static_routes: [{prefix: 10.245.1.0/24, vteps: [198.18.0.2]}]
  - {name: blue, subnet: 10.244.2.0/24, vni: 5000}
)" + extra_networks;
  auto c = parse_config(yaml, "test.yaml");
  if (!c) {
    fprintf(stderr, "test config: %s\n", c.error().c_str());
    std::abort();
  }
  c->daemon.state_dir = state_dir;
  return std::move(*c);
}

inline v1::EndpointSpec endpoint(const std::string& cid, const std::string& network, const std::string& ip,
                                 const std::string& iface = "vxf0") {
  v1::EndpointSpec e;
  e.set_container_id(cid);
  e.set_ifname("net1");
  e.set_network(network);
  e.set_ip(ip);
  e.set_mac("02:00:00:00:00:01");
  e.set_host_iface(iface);
  e.set_netns("/var/run/netns/" + cid);
  return e;
}

// One request, one response over a fresh connection.
inline Result<v1::ControlResponse> rpc(const std::string& socket, v1::ControlRequest request, int timeout_ms = 3000) {
  auto fd = connect_unix(socket, timeout_ms);
  if (!fd) return make_error(fd.error());
  v1::ControlResponse response;
  auto ok = write_delimited(*fd, request, timeout_ms);
  if (ok) ok = read_delimited(*fd, response, timeout_ms);
  ::close(*fd);
  if (!ok) return make_error(ok.error());
  return response;
}

}  // namespace vxfed::control::testing
