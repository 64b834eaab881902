#include "cni/conf_check_node.hpp"

#include <algorithm>

#include "cni/node_block.hpp"
#include "cni/vxfedd_client.hpp"
#include "common/net/ipv4.hpp"

namespace vxfed::cni {

namespace {

// --check runs by hand and in install steps: an unresponsive vxfedd should not hold it up for
// the ADD-time timeout.
constexpr std::uint32_t kCheckTimeoutMs = 2000;

bool names_addresses(const nlohmann::json& raw) {
  auto ipam = raw.find("ipam");
  if (ipam == raw.end() || !ipam->is_object()) return false;
  const std::string type = ipam->value("type", "");
  if (type == "host-local") return !ipam_takes_node_range(raw);
  if (type == "static") return ipam->contains("addresses");
  return false;
}

}  // namespace

Expected<NodeCheck> check_against_node(const NetConf& conf, const std::string& where) {
  if (!names_addresses(conf.raw))
    return NodeCheck{true, where + ": " + (conf.ipam_type == "host-local"
                                               ? "host-local without ranges: vxfed hands it each node's block"
                                               : "no addresses of its own to check against this node's block")};
  const std::string not_checked = where + ": ipam's addresses not checked against this node's block: ";
  auto client = VxfeddClient::connect(conf.socket, static_cast<int>(std::min(conf.timeout_ms, kCheckTimeoutMs)));
  if (!client)
    return NodeCheck{false, not_checked + "vxfedd is not reachable at " + conf.socket + " (" + client.error().details +
                                "); run the check again where vxfedd runs, or ADD fails with code 7 on a node whose "
                                "block does not hold them"};
  pb::ControlRequest req;
  req.mutable_get_network()->set_name(conf.network);
  auto resp = client->call(req);
  if (!resp) return NodeCheck{false, not_checked + resp.error().msg + " (" + resp.error().details + ")"};
  if (resp->code() == pb::NOT_FOUND)
    return NodeCheck{false, not_checked + "vxfedd at " + conf.socket + " has no network \"" + conf.network +
                                "\" (yet); ADD fails with code 7 until it has"};
  if (resp->code() != pb::OK)
    return NodeCheck{false, not_checked + from_vxfedd(*resp, "vxfedd did not describe network \"" + conf.network + "\"").msg};

  const auto& info = resp->network();
  auto subnet = net::Ipv4Prefix::parse(info.spec().subnet());
  if (!subnet) return NodeCheck{false, not_checked + "vxfedd gives network \"" + conf.network + "\" no valid subnet"};
  std::optional<net::Ipv4Prefix> block;
  if (!info.node_block().empty()) {
    auto b = net::Ipv4Prefix::parse(info.node_block());
    if (!b) return NodeCheck{false, not_checked + "vxfedd gives an invalid block: " + b.error()};
    block = *b;
  }
  if (auto r = check_ranges_in_block(conf.raw, block, *subnet, conf.network, where); !r) return r.error();
  if (auto r = check_requested_in_block(Requested{}, static_addresses(conf.raw), block.value_or(*subnet), conf.network);
      !r)
    return cni_error(r.error().code, where + ": " + r.error().msg, r.error().details);
  return NodeCheck{true, where + ": ipam's addresses are inside " +
                             (block ? "this node's block " + block->str() : "the subnet " + subnet->str()) +
                             " (vxfedd at " + conf.socket + ")"};
}

}  // namespace vxfed::cni
