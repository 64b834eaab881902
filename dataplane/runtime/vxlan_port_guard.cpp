#include "dataplane/runtime/vxlan_port_guard.hpp"

#include <spdlog/spdlog.h>

#include <utility>

#include "dataplane/runtime/kernel_vxlan_devices.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::dataplane {

namespace {

void log_claim(const VxlanPortClaim& claim) {
  switch (claim.state()) {
    case VxlanPortClaim::State::claimed:
    case VxlanPortClaim::State::not_local:
      spdlog::info("{}", claim.describe());
      break;
    default:
      spdlog::warn("{}", claim.describe());
  }
}

}  // namespace

VxlanPortGuard::VxlanPortGuard(Config config) : config_(std::move(config)) {
  claim_ = std::make_unique<VxlanPortClaim>(config_.vtep, config_.port);
  log_claim(*claim_);
  if (!config_.uplink_iface.empty() && config_.kernel_drop) attach_drop();
  next_check_ = std::chrono::steady_clock::now() + kRecheck;
}

void VxlanPortGuard::tick(std::chrono::steady_clock::time_point now) {
  if (now < next_check_) return;
  next_check_ = now + kRecheck;
  retake_claim();
  if (config_.uplink_iface.empty() || !config_.kernel_drop) return;
  // A drop that failed (an interface not there yet, a transient error) is tried again; one the
  // kernel cannot do (no TCX) is not.
  if (drop_ == nullptr || drop_->state() == UplinkKernelDrop::State::failed) attach_drop();
  update_scope();
}

void VxlanPortGuard::retake_claim() {
  const auto before = claim_->state();
  if (before == VxlanPortClaim::State::claimed || before == VxlanPortClaim::State::not_local) return;
  auto next = std::make_unique<VxlanPortClaim>(config_.vtep, config_.port);
  if (next->state() != before) log_claim(*next);
  claim_ = std::move(next);
}

void VxlanPortGuard::attach_drop() {
  const std::string pin_dir = config_.pin_root.empty() ? "" : uplink_drop_pin_dir(config_.pin_root, config_.uplink_iface);
  drop_.reset();  // a failed one holds nothing; closing first keeps the pins' single owner clear
  drop_ = std::make_unique<UplinkKernelDrop>(config_.uplink_iface, config_.vtep, config_.port, pin_dir);
  if (drop_->state() == UplinkKernelDrop::State::attached) {
    if (auto st = drop_->set_vnis(vnis_); !st) spdlog::error("{}", st.error());
    update_scope();
  }
  const std::string text = drop_->describe();
  if (text != drop_logged_) {
    if (drop_->state() == UplinkKernelDrop::State::attached)
      spdlog::info("{}", text);
    else
      spdlog::warn("{}", text);
    drop_logged_ = text;
  }
}

void VxlanPortGuard::update_scope() {
  if (drop_ == nullptr || drop_->state() != UplinkKernelDrop::State::attached) return;
  auto device = kernel_vxlan_device_on_port(config_.port);
  if (!device) {
    // Unknown: keep the scope as it is (`all` from the start: fail closed).
    if (device.error() != scope_error_) spdlog::warn("reading the kernel's VXLAN devices: {}", device.error());
    scope_error_ = device.error();
    return;
  }
  scope_error_.clear();
  const auto scope = *device ? UplinkKernelDrop::Scope::our_vnis : UplinkKernelDrop::Scope::all;
  if (scope == drop_->scope()) return;
  if (auto st = drop_->set_scope(scope); !st) {
    spdlog::error("{}", st.error());
    return;
  }
  spdlog::info("{}", drop_->describe());
}

void VxlanPortGuard::set_vnis(const std::set<std::uint32_t>& vnis) {
  if (vnis == vnis_) return;
  vnis_ = vnis;
  if (drop_ != nullptr)
    if (auto st = drop_->set_vnis(vnis_); !st) spdlog::error("{}", st.error());
}

void VxlanPortGuard::fill_status(v1::DataplaneStatus& s) const {
  s.set_vxlan_port(VxlanPortClaim::name(claim_->state()));
  s.set_uplink_kernel_drop(drop_ ? UplinkKernelDrop::name(drop_->state()) : "off");
  if (drop_ && drop_->state() == UplinkKernelDrop::State::attached) {
    s.set_uplink_kernel_drop_scope(UplinkKernelDrop::name(drop_->scope()));
    s.set_uplink_kernel_drop_pinned(drop_->pinned());
  }
}

}  // namespace vxfed::dataplane
