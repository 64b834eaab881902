#include "tests/dataplane/sample_tables.hpp"

#include <arpa/inet.h>

namespace vxfed::test {

dataplane::v1::Tables sample_tables() {
  dataplane::v1::Tables t;
  auto* a = t.add_networks();
  a->set_vni(kVniA);
  a->set_gateway_ip("10.244.0.1");
  auto* b = t.add_networks();
  b->set_vni(kVniB);
  b->set_gateway_ip("10.250.0.1");
  auto endpoint = [&](const char* id, std::uint32_t vni, const char* ip, const char* mac, const char* iface) {
    auto* e = t.add_endpoints();
    e->set_id(id);
    e->set_vni(vni);
    e->set_ip(ip);
    e->set_mac(mac);
    e->set_iface(iface);
  };
  endpoint("pod1/net1", kVniA, "10.244.1.10", "02:aa:00:00:00:10", "pod1");
  endpoint("pod2/net1", kVniA, "10.244.1.11", "02:aa:00:00:00:11", "pod2");
  endpoint("pod3/net1", kVniB, "10.250.1.10", "02:bb:00:00:00:10", "pod3");
  auto route = [&](std::uint32_t vni, const char* prefix, std::initializer_list<const char*> vteps) {
    auto* r = t.add_routes();
    r->set_vni(vni);
    r->set_prefix(prefix);
    for (const char* v : vteps) r->add_next_hops()->set_vtep(v);
  };
  route(kVniA, "10.245.0.0/16", {"198.18.0.2"});
  route(kVniA, "10.245.7.0/24", {"198.18.0.3", "198.18.0.4"});
  route(kVniA, "10.246.0.0/16", {"198.18.0.6"});
  route(kVniB, "10.245.0.0/16", {"198.18.0.5"});
  auto* v = t.add_vteps();
  v->set_ip("198.18.0.9");
  v->add_vnis(kVniA);
  for (int n : {2, 3, 4, 5, 9}) {
    auto* nb = t.add_neighbors();
    nb->set_ip("198.18.0." + std::to_string(n));
    char buf[18];
    std::snprintf(buf, sizeof(buf), "02:00:00:00:02:%02x", n);
    nb->set_mac(buf);
  }
  return t;
}

dp::BuildContext Node::context() {
  dp::BuildContext c;
  c.local_vtep_ip_be = htonl(ip("198.18.0.1"));
  c.uplink_mac = kUplinkMac;
  c.underlay_mtu = 9000;
  c.uplink_port = kUplink;
  c.port_for_iface = [](const std::string& iface) -> std::optional<std::uint16_t> {
    if (iface == "pod1") return kPod1;
    if (iface == "pod2") return kPod2;
    if (iface == "pod3") return kPod3;
    if (iface.rfind("port", 0) == 0) return static_cast<std::uint16_t>(std::stoi(iface.substr(4)));
    return std::nullopt;
  };
  c.neighbors = &neighbors;
  c.vni_slots = &vni_slots;
  c.path_mtus = &path_mtus;
  return c;
}

}  // namespace vxfed::test
