// The 802.1Q tag of what the dataplane sends on the uplink (--underlay-vlan): a VLAN ID (0: a
// priority tag only) and the priority bits (PCP) from the inner packet's traffic class, so a
// PFC-enabled fabric sees the class the pod's eBPF marking gave it (RoCEv2: DSCP 26 -> PCP 3).
// The PCP of a packet is pcp_of_dscp[its DSCP]: by default the DSCP's class selector (its
// three high bits), overridable per DSCP. Per packet the pipeline stores tx_flags into the
// mbuf's ol_flags and tci_of_tos[TOS byte] into its vlan_tci; the port inserts the tag
// (RTE_ETH_TX_OFFLOAD_VLAN_INSERT: the af_packet PMD in software, NICs in hardware).
// Untagged: both are 0, the same two stores.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include <rte_mbuf_core.h>

namespace vxfed::dataplane {

struct UnderlayTag {
  std::uint64_t tx_flags = 0;               // RTE_MBUF_F_TX_VLAN when tagging
  std::array<std::uint16_t, 256> tci_of_tos{};  // PCP << 13 | VID, by the inner IPv4 TOS byte

  static constexpr std::array<std::uint8_t, 64> class_selector_pcp() {
    std::array<std::uint8_t, 64> m{};
    for (unsigned d = 0; d < 64; ++d) m[d] = static_cast<std::uint8_t>(d >> 3);
    return m;
  }

  // vid empty: untagged. vid 0..4094; pcp values 0..7 (checked by the options).
  static UnderlayTag make(std::optional<std::uint16_t> vid,
                          const std::array<std::uint8_t, 64>& pcp_of_dscp = class_selector_pcp()) {
    UnderlayTag t;
    if (!vid) return t;
    t.tx_flags = RTE_MBUF_F_TX_VLAN;
    for (unsigned tos = 0; tos < 256; ++tos)
      t.tci_of_tos[tos] = static_cast<std::uint16_t>((pcp_of_dscp[tos >> 2] & 7u) << 13 | (*vid & 0x0fffu));
    return t;
  }
  // The TCI of frames without a traffic class (ARP): PCP 0.
  std::uint16_t control_tci() const { return static_cast<std::uint16_t>(tci_of_tos[0] & 0x0fffu); }
};

}  // namespace vxfed::dataplane
