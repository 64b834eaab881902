// rtnetlink through libmnl: the few link, address and route operations the plugin needs.
// A Netlink object is bound to the network namespace it was opened in (a netlink socket stays
// in the namespace it was created in), so the plugin opens one in the host namespace and one
// in the pod's, and never has to keep the process itself inside the pod's namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "common/result.hpp"

struct mnl_socket;

namespace vxfed::cni {

struct LinkInfo {
  int index = 0;
  std::string name;
  std::uint32_t mtu = 0;
  net::Mac mac{};
  bool up = false;          // IFF_UP
  std::string kind;         // "veth", ... (IFLA_INFO_KIND)
  int peer_index = 0;       // IFLA_LINK: for a veth, the peer's index (in the peer's namespace)
};

struct RouteEntry {
  net::Ipv4Prefix dst;
  net::Ipv4Addr gateway;      // 0.0.0.0: none (on-link)
  int oif = 0;
  std::uint8_t scope = 0;
  std::uint8_t protocol = 0;
};

class Netlink {
 public:
  // In the calling thread's current network namespace.
  static vxfed::Result<Netlink> open();
  // In the namespace behind `netns_fd` (a /proc/.../ns/net or /var/run/netns/... fd): the
  // socket is created there by common/netns.hpp's run_in_netns; no thread of ours moves.
  static vxfed::Result<Netlink> open_in(int netns_fd);

  Netlink(Netlink&& o) noexcept;
  Netlink& operator=(Netlink&&) = delete;
  Netlink(const Netlink&) = delete;
  ~Netlink();

  // nullopt when no such link.
  vxfed::Result<std::optional<LinkInfo>> get_link(const std::string& name);
  // Creates a veth pair: `name` here, `peer_name` directly in `peer_netns_fd`.
  vxfed::Status create_veth(const std::string& name, std::uint32_t mtu, const std::string& peer_name,
                            std::uint32_t peer_mtu, int peer_netns_fd);
  vxfed::Status set_mac(int index, const net::Mac& mac);
  vxfed::Status set_up(int index);
  // true when deleted, false when it did not exist.
  vxfed::Result<bool> delete_link(const std::string& name);
  vxfed::Status add_address(int index, const net::Ipv4Interface& address);
  vxfed::Result<std::vector<net::Ipv4Interface>> addresses(int index);
  // gateway 0.0.0.0: on-link.
  vxfed::Status add_route(int oif, const net::Ipv4Prefix& dst, net::Ipv4Addr gateway, bool scope_link);
  // true when deleted, false when it did not exist.
  vxfed::Result<bool> delete_route(int oif, const net::Ipv4Prefix& dst, net::Ipv4Addr gateway);
  vxfed::Result<std::vector<RouteEntry>> routes(int oif);  // IPv4, main table
  // A permanent IPv4 neighbour entry (created or replaced): the kernel sends to `ip` on this
  // link with `mac` and never asks by ARP.
  vxfed::Status set_neighbor(int index, net::Ipv4Addr ip, const net::Mac& mac);

 private:
  explicit Netlink(mnl_socket* sock);
  // Sends one request with NLM_F_ACK and waits for the ack; returns -errno (0 on success).
  int transact(void* nlh);
  template <typename F>
  int dump(void* nlh, F&& on_message);

  mnl_socket* sock_ = nullptr;
  std::uint32_t portid_ = 0;
  std::uint32_t seq_ = 0;
};

// Writes "1" to /proc/sys/net/ipv6/conf/<ifname>/disable_ipv6 in the current namespace; the
// host end of a pod veth carries no IPv6 of its own (no router solicitations into the dataplane).
void disable_ipv6(const std::string& ifname);

}  // namespace vxfed::cni
