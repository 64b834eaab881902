#include "dataplane/runtime/uplink_kernel_drop.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <iterator>

namespace vxfed::dataplane {

namespace {

// Linux 6.6's TCX attach point; Debian 12's headers (6.1) predate it, the running kernel
// decides (an older one answers EINVAL).
constexpr std::uint32_t kBpfTcxIngress = 46;
// TCX verdicts: -1 hands the frame to the next program (or on, when there is none).
constexpr std::int32_t kTcxNext = -1;

// eBPF instructions (linux/bpf.h's encoding; the kernel's own macros are not uapi).
constexpr bpf_insn insn(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off, std::int32_t imm) {
  return bpf_insn{code, dst, src, off, imm};
}
constexpr bpf_insn mov64_reg(std::uint8_t dst, std::uint8_t src) { return insn(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0); }
constexpr bpf_insn mov64_imm(std::uint8_t dst, std::int32_t imm) { return insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm); }
constexpr bpf_insn ldx_w(std::uint8_t dst, std::uint8_t src, std::int16_t off) { return insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0); }
// Packet loads relative to the frame's first byte (r6 holds the context); network byte order
// converted to host order; a load past the end ends the program with 0 (the frame passes).
constexpr bpf_insn ld_abs(std::uint8_t size, std::int32_t off) { return insn(BPF_LD | BPF_ABS | size, 0, 0, 0, off); }
constexpr bpf_insn and32_imm(std::uint8_t dst, std::int32_t imm) { return insn(BPF_ALU | BPF_AND | BPF_K, dst, 0, 0, imm); }
// 32-bit compare (an address above 127.255.255.255 would not survive the 64-bit compare's sign extension).
constexpr bpf_insn jne32_imm(std::uint8_t dst, std::int32_t imm, std::int16_t off) { return insn(BPF_JMP32 | BPF_JNE | BPF_K, dst, 0, off, imm); }
constexpr bpf_insn exit_insn() { return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }

long bpf(int cmd, bpf_attr* attr) { return ::syscall(SYS_bpf, cmd, attr, sizeof(*attr)); }

}  // namespace

UplinkKernelDrop::UplinkKernelDrop(const std::string& iface, net::Ipv4Addr vtep, std::uint16_t port)
    : iface_(iface), vtep_(vtep), port_(port) {
  const unsigned ifindex = ::if_nametoindex(iface.c_str());
  if (ifindex == 0) {
    what_ = "uplink " + iface + ": " + std::strerror(errno);
    return;
  }
  const auto protocol_ip = static_cast<std::int32_t>(htons(0x0800));  // __sk_buff.protocol is big-endian
  const auto vtep_host = static_cast<std::int32_t>(ntohl(vtep.to_network()));
  // Offsets into the Ethernet frame (the ingress hook runs with the MAC header in front).
  constexpr std::int16_t kPass = 16;  // index of the "pass" exit below
  const bpf_insn prog[] = {
      /* 0 */ mov64_reg(6, 1),                                                // LD_ABS reads through r6
      /* 1 */ ldx_w(2, 1, offsetof(__sk_buff, protocol)),
      /* 2 */ jne32_imm(2, protocol_ip, kPass - 3),
      /* 3 */ ld_abs(BPF_B, 14),                                              // version, header length
      /* 4 */ jne32_imm(0, 0x45, kPass - 5),                                  // IPv4 without options
      /* 5 */ ld_abs(BPF_B, 23),
      /* 6 */ jne32_imm(0, IPPROTO_UDP, kPass - 7),
      /* 7 */ ld_abs(BPF_H, 20),                                              // flags, fragment offset
      /* 8 */ and32_imm(0, 0x3fff),                                           // MF or an offset: a fragment,
      /* 9 */ jne32_imm(0, 0, kPass - 10),                                    // the pipeline's to count, the kernel's to see
      /* 10 */ ld_abs(BPF_W, 30),                                             // destination address
      /* 11 */ jne32_imm(0, vtep_host, kPass - 12),
      /* 12 */ ld_abs(BPF_H, 36),                                             // UDP destination port
      /* 13 */ jne32_imm(0, port, kPass - 14),
      /* 14 */ mov64_imm(0, TC_ACT_SHOT),
      /* 15 */ exit_insn(),
      /* 16 */ mov64_imm(0, kTcxNext),
      /* 17 */ exit_insn(),
  };
  static_assert(std::size(prog) == kPass + 2);
  char log[2048] = {};
  static const char license[] = "GPL";
  bpf_attr load{};
  load.prog_type = BPF_PROG_TYPE_SCHED_CLS;
  load.expected_attach_type = kBpfTcxIngress;
  load.insns = reinterpret_cast<std::uintptr_t>(prog);
  load.insn_cnt = static_cast<std::uint32_t>(std::size(prog));
  load.license = reinterpret_cast<std::uintptr_t>(license);
  load.log_buf = reinterpret_cast<std::uintptr_t>(log);
  load.log_size = sizeof(log);
  load.log_level = 1;
  std::strncpy(load.prog_name, "vxfed_ul_drop", sizeof(load.prog_name) - 1);
  prog_fd_ = static_cast<int>(bpf(BPF_PROG_LOAD, &load));
  if (prog_fd_ < 0) {
    const int err = errno;
    state_ = err == ENOSYS ? State::unsupported : State::failed;
    what_ = std::string("loading the program: ") + std::strerror(err) +
            (err == EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN, or root)" : "") +
            (log[0] ? std::string(" (verifier: ") + log + ")" : "");
    return;
  }
  bpf_attr link{};
  link.link_create.prog_fd = static_cast<std::uint32_t>(prog_fd_);
  link.link_create.target_ifindex = ifindex;
  link.link_create.attach_type = kBpfTcxIngress;
  link_fd_ = static_cast<int>(bpf(BPF_LINK_CREATE, &link));
  if (link_fd_ < 0) {
    const int err = errno;
    state_ = err == EINVAL ? State::unsupported : State::failed;
    what_ = std::string("attaching at tc ingress (TCX): ") + std::strerror(err);
    return;
  }
  state_ = State::attached;
}

UplinkKernelDrop::~UplinkKernelDrop() {
  if (link_fd_ >= 0) ::close(link_fd_);  // detaches: the link is ours alone
  if (prog_fd_ >= 0) ::close(prog_fd_);
}

const char* UplinkKernelDrop::name(State s) {
  switch (s) {
    case State::attached: return "attached";
    case State::unsupported: return "unsupported";
    case State::failed: return "failed";
  }
  return "failed";
}

std::string UplinkKernelDrop::describe() const {
  const std::string what = "VXLAN to " + vtep_.str() + ":" + std::to_string(port_) + " on " + iface_;
  switch (state_) {
    case State::attached:
      return what + ": dropped at tc ingress once our AF_PACKET socket has it (the node's IP and UDP input skip it)";
    case State::unsupported:
      return what + ": not dropped at tc ingress (" + what_ +
             "); the node's kernel still runs IP and UDP input on every frame and the port claim drops it";
    case State::failed:
      return what + ": not dropped at tc ingress: " + what_;
  }
  return what;
}

}  // namespace vxfed::dataplane
