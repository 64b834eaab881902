// fake_vxfedd: a unit-level stand-in for vxfedd (control/) that speaks proto/control.proto on
// a unix socket, so the CNI plugin's integration tests can run before or without the real
// daemon. It keeps endpoints in memory, reports an endpoint as in the dataplane when its host
// interface exists (what the real dataplane needs to attach), and writes its endpoint table
// to --state after every change so tests can count endpoints.
//
//   fake_vxfedd --socket S --config networks.json [--state endpoints.json] [--not-ready]
//               [--dataplane-refuses-prefix P]  (attaches of these container ids: DATAPLANE_REFUSED)
//               [--refuse-attach-prefix P] [--refuse-detach-prefix P] [--bgp-down]
//   networks.json: {"networks":[{"name":"fed-a","subnet":"10.244.0.0/16","gateway":"10.244.0.1",
//                   "mtu":8950,"vni":1001,"remote_cidrs":["10.245.0.0/16"],"node_block":"10.244.3.0/24",
//                   "service_cidrs":["10.96.0.0/24"]}]}   (service_cidrs: the VIP range vxfedd hands over)
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/control.pb.h"
#include "common/delimited.hpp"

namespace pb = vxfed::control::v1;

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct State {
  std::map<std::string, pb::NetworkInfo> networks;
  std::map<std::pair<std::string, std::string>, pb::EndpointInfo> endpoints;
  bool ready = true;
  std::string refuse_prefix;  // attach of container ids with this prefix fails (rollback tests)
  std::string refuse_detach_prefix;  // detach of these fails (queued-detach retry tests)
  std::string dataplane_refuses_prefix;  // the "dataplane" refuses these endpoints (no pod port)
  bool bgp_down = false;      // status: BGP enabled, FPM stream not connected
  std::string state_path;
  std::uint64_t requests = 0;
};

void save(const State& s) {
  if (s.state_path.empty()) return;
  nlohmann::json j;
  j["requests"] = s.requests;
  j["endpoints"] = nlohmann::json::array();
  for (const auto& [key, ep] : s.endpoints) {
    const auto& e = ep.spec();
    nlohmann::json pod = nlohmann::json::object();
    for (const auto& [k, v] : e.pod()) pod[k] = v;
    j["endpoints"].push_back({{"container_id", e.container_id()}, {"ifname", e.ifname()}, {"network", e.network()},
                              {"ip", e.ip()}, {"mac", e.mac()}, {"host_iface", e.host_iface()},
                              {"netns", e.netns()}, {"pod", pod}});
  }
  const std::string tmp = s.state_path + ".tmp";
  std::ofstream(tmp) << j.dump(2);
  std::rename(tmp.c_str(), s.state_path.c_str());
}

pb::ControlResponse handle(State& s, const pb::ControlRequest& req) {
  pb::ControlResponse resp;
  resp.set_request_id(req.request_id());
  ++s.requests;
  auto fail = [&](pb::ErrorCode code, const std::string& msg) {
    resp.set_code(code);
    resp.set_error(msg);
    return resp;
  };
  switch (req.op_case()) {
    case pb::ControlRequest::kGetNetwork: {
      auto it = s.networks.find(req.get_network().name());
      if (it == s.networks.end()) return fail(pb::NOT_FOUND, "no network named \"" + req.get_network().name() + "\"");
      *resp.mutable_network() = it->second;
      return resp;
    }
    case pb::ControlRequest::kAttachEndpoint: {
      const auto& e = req.attach_endpoint().endpoint();
      if (!s.networks.count(e.network())) return fail(pb::NOT_FOUND, "no network named \"" + e.network() + "\"");
      if (!s.refuse_prefix.empty() && e.container_id().rfind(s.refuse_prefix, 0) == 0)
        return fail(pb::INTERNAL, "refusing " + e.container_id() + " (--refuse-attach-prefix)");
      if (e.container_id().empty() || e.ifname().empty() || e.ip().empty() || e.host_iface().empty())
        return fail(pb::INVALID_ARGUMENT, "endpoint needs container_id, ifname, ip and host_iface");
      for (const auto& [key, other] : s.endpoints)
        if (other.spec().ip() == e.ip() && key != std::make_pair(e.container_id(), e.ifname()))
          return fail(pb::ALREADY_EXISTS, "IP " + e.ip() + " is already used by " + key.first);
      // Like vxfedd with wait_ms: an endpoint the dataplane does not carry is not kept.
      const bool waits = req.attach_endpoint().wait_ms() > 0;
      const bool dp_refuses =
          !s.dataplane_refuses_prefix.empty() && e.container_id().rfind(s.dataplane_refuses_prefix, 0) == 0;
      if (waits && dp_refuses)
        return fail(pb::DATAPLANE_REFUSED, "the dataplane refused endpoint " + e.container_id() + "/" + e.ifname() +
                                               ": cannot serve interface " + e.host_iface() +
                                               ": all 0 pod ports of this dataplane are in use (fake)");
      if (waits && !s.ready)
        return fail(pb::UNAVAILABLE, "the dataplane did not take endpoint " + e.container_id() + "/" + e.ifname() +
                                         " within " + std::to_string(req.attach_endpoint().wait_ms()) +
                                         " ms (the dataplane is not connected to vxfedd); it was detached again");
      pb::EndpointInfo info;
      *info.mutable_spec() = e;
      info.set_vni(s.networks[e.network()].vni());
      info.set_in_dataplane(s.ready && !dp_refuses);
      info.set_dataplane(!s.ready ? pb::DP_NOT_CONNECTED : dp_refuses ? pb::DP_REFUSED : pb::DP_CARRIED);
      s.endpoints[{e.container_id(), e.ifname()}] = info;
      *resp.mutable_endpoint() = info;
      save(s);
      return resp;
    }
    case pb::ControlRequest::kDetachEndpoint: {
      auto key = std::make_pair(req.detach_endpoint().container_id(), req.detach_endpoint().ifname());
      if (!s.refuse_detach_prefix.empty() && key.first.rfind(s.refuse_detach_prefix, 0) == 0)
        return fail(pb::INTERNAL, "refusing to detach " + key.first + " (--refuse-detach-prefix)");
      // Like vxfedd: detaching an unknown endpoint is OK (idempotent).
      if (s.endpoints.erase(key)) save(s);
      return resp;
    }
    case pb::ControlRequest::kCheckEndpoint: {
      auto key = std::make_pair(req.check_endpoint().container_id(), req.check_endpoint().ifname());
      auto it = s.endpoints.find(key);
      if (it == s.endpoints.end()) return fail(pb::NOT_FOUND, "no endpoint " + key.first + "/" + key.second);
      pb::EndpointInfo info = it->second;
      // The dataplane serves a pod port only while its interface exists.
      const bool carried = s.ready && if_nametoindex(info.spec().host_iface().c_str()) != 0 &&
                           info.dataplane() != pb::DP_REFUSED;
      info.set_in_dataplane(carried);
      if (!s.ready) {
        info.set_dataplane(pb::DP_NOT_CONNECTED);
        info.set_dataplane_error("the dataplane is not connected to vxfedd (fake --not-ready)");
      } else if (info.dataplane() == pb::DP_REFUSED) {
        info.set_dataplane_error("cannot serve interface " + info.spec().host_iface() + " (fake)");
      } else {
        info.set_dataplane(carried ? pb::DP_CARRIED : pb::DP_PENDING);
      }
      *resp.mutable_endpoint() = info;
      return resp;
    }
    case pb::ControlRequest::kGetStatus: {
      auto* st = resp.mutable_status();
      st->set_node("fake");
      st->set_dataplane_connected(s.ready);
      st->set_dataplane_ready(s.ready);
      st->set_networks(static_cast<std::uint32_t>(s.networks.size()));
      st->set_endpoints(static_cast<std::uint32_t>(s.endpoints.size()));
      st->set_version("fake");
      st->set_bgp_enabled(s.bgp_down);
      st->set_fpm_connected(!s.bgp_down);
      return resp;
    }
    case pb::ControlRequest::kListEndpoints: {
      for (const auto& [key, ep] : s.endpoints) *resp.mutable_endpoints()->add_endpoints() = ep;
      return resp;
    }
    case pb::ControlRequest::kListNetworks: {
      for (const auto& [name, n] : s.networks) *resp.mutable_networks()->add_networks() = n;
      return resp;
    }
    case pb::ControlRequest::kGarbageCollect: {
      const auto& gc = req.garbage_collect();
      std::set<std::pair<std::string, std::string>> valid;
      for (const auto& a : gc.valid()) valid.insert({a.container_id(), a.ifname()});
      std::set<std::string> nets(gc.networks().begin(), gc.networks().end());
      for (auto it = s.endpoints.begin(); it != s.endpoints.end();) {
        if ((nets.empty() || nets.count(it->second.spec().network())) && !valid.count(it->first)) {
          *resp.mutable_gc()->add_removed() = it->second.spec();
          it = s.endpoints.erase(it);
        } else {
          ++it;
        }
      }
      save(s);
      return resp;
    }
    default:
      return fail(pb::INVALID_ARGUMENT, "fake_vxfedd does not implement this request");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket_path, config_path;
  State s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) socket_path = argv[++i];
    else if (a == "--config" && i + 1 < argc) config_path = argv[++i];
    else if (a == "--state" && i + 1 < argc) s.state_path = argv[++i];
    else if (a == "--not-ready") s.ready = false;
    else if (a == "--refuse-attach-prefix" && i + 1 < argc) s.refuse_prefix = argv[++i];
    else if (a == "--refuse-detach-prefix" && i + 1 < argc) s.refuse_detach_prefix = argv[++i];
    else if (a == "--bgp-down") s.bgp_down = true;
    else if (a == "--dataplane-refuses-prefix" && i + 1 < argc) s.dataplane_refuses_prefix = argv[++i];
    else {
      std::fprintf(stderr, "usage: fake_vxfedd --socket S --config F [--state F] [--not-ready] [--refuse-attach-prefix P]\n"
                           "       [--refuse-detach-prefix P] [--bgp-down] [--dataplane-refuses-prefix P]\n");
      return 2;
    }
  }
  std::ifstream in(config_path);
  auto cfg = nlohmann::json::parse(in, nullptr, false);
  if (cfg.is_discarded()) {
    std::fprintf(stderr, "fake_vxfedd: cannot read %s\n", config_path.c_str());
    return 2;
  }
  for (const auto& n : cfg["networks"]) {
    pb::NetworkInfo info;
    info.mutable_spec()->set_name(n["name"]);
    info.mutable_spec()->set_subnet(n["subnet"]);
    info.mutable_spec()->set_gateway(n.value("gateway", ""));
    info.set_mtu(n.value("mtu", 8950));
    info.set_vni(n.value("vni", 1000));
    info.set_gateway_mac("0a:58:00:00:00:01");
    info.set_node_block(n.value("node_block", ""));
    for (const auto& r : n.value("remote_cidrs", nlohmann::json::array())) info.add_remote_cidrs(r.get<std::string>());
    for (const auto& r : n.value("service_cidrs", nlohmann::json::array())) info.add_service_cidrs(r.get<std::string>());
    s.networks[info.spec().name()] = info;
  }
  // Endpoints survive a restart, as they do in the real vxfedd.
  if (!s.state_path.empty()) {
    std::ifstream old(s.state_path);
    auto prev = nlohmann::json::parse(old, nullptr, false);
    if (!prev.is_discarded() && prev.contains("endpoints")) {
      for (const auto& e : prev["endpoints"]) {
        pb::EndpointInfo info;
        auto* sp = info.mutable_spec();
        sp->set_container_id(e["container_id"]);
        sp->set_ifname(e["ifname"]);
        sp->set_network(e["network"]);
        sp->set_ip(e["ip"]);
        sp->set_mac(e["mac"]);
        sp->set_host_iface(e["host_iface"]);
        sp->set_netns(e["netns"]);
        for (const auto& [k, v] : e["pod"].items()) (*sp->mutable_pod())[k] = v.get<std::string>();
        // Restarted with --dataplane-refuses-prefix: the "dataplane" now refuses these.
        const bool refused = !s.dataplane_refuses_prefix.empty() &&
                             sp->container_id().rfind(s.dataplane_refuses_prefix, 0) == 0;
        info.set_in_dataplane(s.ready && !refused);
        info.set_dataplane(!s.ready ? pb::DP_NOT_CONNECTED : refused ? pb::DP_REFUSED : pb::DP_CARRIED);
        s.endpoints[{sp->container_id(), sp->ifname()}] = info;
      }
    }
  }
  save(s);

  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGPIPE, SIG_IGN);
  const int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  unlink(socket_path.c_str());
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 128) != 0) {
    std::perror("fake_vxfedd: bind/listen");
    return 1;
  }
  std::fprintf(stderr, "fake_vxfedd: listening on %s\n", socket_path.c_str());
  struct Client {
    int fd;
    vxfed::DelimitedDecoder decoder;
  };
  std::vector<Client> clients;
  while (!g_stop) {
    std::vector<pollfd> fds{{lfd, POLLIN, 0}};
    for (auto& c : clients) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 200) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int cfd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (cfd >= 0) clients.push_back({cfd, vxfed::DelimitedDecoder()});
    }
    std::vector<int> closed;
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto& c = clients[i - 1];
      char buf[65536];
      const ssize_t n = read(c.fd, buf, sizeof buf);
      if (n <= 0) {
        closed.push_back(c.fd);
        continue;
      }
      c.decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      for (;;) {
        auto frame = c.decoder.next();
        if (!frame.ok()) {
          closed.push_back(c.fd);
          break;
        }
        if (!frame->has_value()) break;
        pb::ControlRequest req;
        if (!req.ParseFromString(**frame)) {
          closed.push_back(c.fd);
          break;
        }
        auto resp = handle(s, req);
        if (!vxfed::write_delimited(c.fd, resp, 2000).ok()) {
          closed.push_back(c.fd);
          break;
        }
      }
    }
    for (int fd : closed) {
      close(fd);
      std::erase_if(clients, [fd](const Client& c) { return c.fd == fd; });
    }
  }
  for (auto& c : clients) close(c.fd);
  close(lfd);
  unlink(socket_path.c_str());
  return 0;
}
