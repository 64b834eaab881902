// IPv4 addresses, CIDRs and MACs as text, the way the APIs carry them. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vxfed::control {

std::optional<std::uint32_t> parse_ipv4(const std::string& text);  // host order
std::string format_ipv4(std::uint32_t addr);

struct Cidr {
  std::uint32_t addr = 0;  // host order, host bits zero
  std::uint8_t len = 0;
  std::string str() const;
  bool contains(std::uint32_t ip) const;
  bool overlaps(const Cidr& other) const;
};
// Refuses host bits set ("10.244.0.1/16") so that every prefix has one spelling.
std::optional<Cidr> parse_cidr(const std::string& text);

bool is_mac(const std::string& text);          // "02:00:00:00:00:01", lower or upper hex
std::string normalize_mac(const std::string& text);

// The MAC the dataplane answers ARP for the gateway with: locally administered, unicast, and a
// function of the VNI alone, so it is the same on every node and after every restart.
std::string gateway_mac_for_vni(std::uint32_t vni);

// DNS-label names for networks and pools: [a-z0-9-], 1..63, no leading or trailing '-'.
bool is_dns_label(const std::string& text);

}  // namespace vxfed::control
