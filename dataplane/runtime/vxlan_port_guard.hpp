// Keeps UDP VTEP:4789 ours: the claim socket (vxlan_port_claim.hpp) and the uplink's tc drop
// (uplink_kernel_drop.hpp), set up at start and kept in force while the dataplane runs.
//
// An unprivileged process can bind VTEP:4789 before the dataplane starts or while it restarts;
// the node's kernel would then hand it every VXLAN datagram, every tenant's traffic. So:
//   - the tc drop is attached whoever holds the port (it sees frames before any socket does),
//     pinned so that it outlives a crash, with the scope `all` unless a kernel VXLAN device of
//     the node shares the port (then only our VNIs, which follow the tables);
//   - twice a second, the control thread takes the claim again when someone else held it (so
//     the port is ours again ≤ 1 s after they leave), re-attaches a drop that failed, and
//     re-reads whether a kernel VXLAN device is there. Every change is logged once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "common/net/ipv4.hpp"
#include "dataplane/runtime/uplink_kernel_drop.hpp"
#include "dataplane/runtime/vxlan_port_claim.hpp"

namespace vxfed::dataplane {

namespace v1 {
class DataplaneStatus;
}

class VxlanPortGuard {
 public:
  struct Config {
    net::Ipv4Addr vtep;
    std::uint16_t port = 4789;
    std::string uplink_iface;  // the uplink's kernel interface ("": none, no tc drop)
    bool kernel_drop = true;   // --uplink-kernel-drop
    std::string pin_root;      // bpffs root for the drop's pins ("": not pinned)
  };
  static constexpr std::chrono::milliseconds kRecheck{500};

  explicit VxlanPortGuard(Config config);

  // Control thread, every loop: does the periodic work when kRecheck has passed.
  void tick(std::chrono::steady_clock::time_point now);
  // The tables' VNIs, after every change (the drop's `our_vnis` scope).
  void set_vnis(const std::set<std::uint32_t>& vnis);
  void fill_status(v1::DataplaneStatus& status) const;

  const VxlanPortClaim& claim() const { return *claim_; }
  const UplinkKernelDrop* drop() const { return drop_.get(); }

 private:
  void retake_claim();
  void attach_drop();
  void update_scope();

  Config config_;
  std::unique_ptr<VxlanPortClaim> claim_;
  std::unique_ptr<UplinkKernelDrop> drop_;
  std::set<std::uint32_t> vnis_;
  std::string drop_logged_;   // the last describe() logged, so a retry that fails alike stays quiet
  std::string scope_error_;   // the last failure to read the link table, logged once
  std::chrono::steady_clock::time_point next_check_{};
};

}  // namespace vxfed::dataplane
