#include "dataplane/runtime/uplink_kernel_drop.hpp"

#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <utility>

namespace vxfed::dataplane {

namespace {

// Linux 6.6's TCX attach point; Debian 12's headers (6.1) predate it, the running kernel
// decides (an older one answers EINVAL).
constexpr std::uint32_t kBpfTcxIngress = 46;
// TCX verdicts: -1 hands the frame to the next program (or on, when there is none).
constexpr std::int32_t kTcxNext = -1;
// Our VNIs and the scope key; a node serves far fewer networks than this.
constexpr std::uint32_t kMapEntries = (1u << 16) + 1;

// eBPF instructions (linux/bpf.h's encoding; the kernel's own macros are not uapi).
constexpr bpf_insn insn(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off, std::int32_t imm) {
  return bpf_insn{code, dst, src, off, imm};
}
constexpr bpf_insn mov64_reg(std::uint8_t dst, std::uint8_t src) { return insn(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0); }
constexpr bpf_insn mov64_imm(std::uint8_t dst, std::int32_t imm) { return insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm); }
constexpr bpf_insn add64_imm(std::uint8_t dst, std::int32_t imm) { return insn(BPF_ALU64 | BPF_ADD | BPF_K, dst, 0, 0, imm); }
constexpr bpf_insn rsh32_imm(std::uint8_t dst, std::int32_t imm) { return insn(BPF_ALU | BPF_RSH | BPF_K, dst, 0, 0, imm); }
constexpr bpf_insn ldx_w(std::uint8_t dst, std::uint8_t src, std::int16_t off) { return insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0); }
constexpr bpf_insn st_w(std::uint8_t dst, std::int16_t off, std::int32_t imm) { return insn(BPF_ST | BPF_MEM | BPF_W, dst, 0, off, imm); }
constexpr bpf_insn stx_w(std::uint8_t dst, std::int16_t off, std::uint8_t src) { return insn(BPF_STX | BPF_MEM | BPF_W, dst, src, off, 0); }
// Packet loads relative to the frame's first byte (r6 holds the context); network byte order
// converted to host order; a load past the end ends the program with 0 (the frame passes).
constexpr bpf_insn ld_abs(std::uint8_t size, std::int32_t off) { return insn(BPF_LD | BPF_ABS | size, 0, 0, 0, off); }
constexpr bpf_insn and32_imm(std::uint8_t dst, std::int32_t imm) { return insn(BPF_ALU | BPF_AND | BPF_K, dst, 0, 0, imm); }
// 32-bit compare (an address above 127.255.255.255 would not survive the 64-bit compare's sign extension).
constexpr bpf_insn jne32_imm(std::uint8_t dst, std::int32_t imm, std::int16_t off) { return insn(BPF_JMP32 | BPF_JNE | BPF_K, dst, 0, off, imm); }
constexpr bpf_insn jne64_imm(std::uint8_t dst, std::int32_t imm, std::int16_t off) { return insn(BPF_JMP | BPF_JNE | BPF_K, dst, 0, off, imm); }
constexpr bpf_insn jeq64_imm(std::uint8_t dst, std::int32_t imm, std::int16_t off) { return insn(BPF_JMP | BPF_JEQ | BPF_K, dst, 0, off, imm); }
constexpr bpf_insn call(std::int32_t helper) { return insn(BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
constexpr bpf_insn exit_insn() { return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }
// A map's address into dst: two instruction slots, the second all zero.
constexpr bpf_insn ld_map_fd(std::uint8_t dst, int fd) { return insn(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, fd); }

long bpf(int cmd, bpf_attr* attr) { return ::syscall(SYS_bpf, cmd, attr, sizeof(*attr)); }

int obj_get(const std::string& path) {
  bpf_attr a{};
  a.pathname = reinterpret_cast<std::uintptr_t>(path.c_str());
  return static_cast<int>(bpf(BPF_OBJ_GET, &a));
}

bool obj_pin(int fd, const std::string& path) {
  bpf_attr a{};
  a.pathname = reinterpret_cast<std::uintptr_t>(path.c_str());
  a.bpf_fd = static_cast<std::uint32_t>(fd);
  return bpf(BPF_OBJ_PIN, &a) == 0;
}

int create_map() {
  bpf_attr a{};
  a.map_type = BPF_MAP_TYPE_HASH;
  a.key_size = 4;
  a.value_size = 1;
  a.max_entries = kMapEntries;
  a.map_flags = BPF_F_NO_PREALLOC;  // a few entries in use: no 64k elements allocated up front
  std::strncpy(a.map_name, "vxfed_ul_vnis", sizeof(a.map_name) - 1);
  return static_cast<int>(bpf(BPF_MAP_CREATE, &a));
}

// mkdir -p; true when the directory exists afterwards.
bool make_dirs(const std::string& dir) {
  for (std::size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      const std::string part = dir.substr(0, i);
      if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

}  // namespace

std::string uplink_drop_pin_dir(const std::string& root, const std::string& iface) {
  struct stat st {};
  const unsigned long long netns = ::stat("/proc/thread-self/ns/net", &st) == 0 ? st.st_ino : 0;
  return root + "/uplink-drop/" + std::to_string(netns) + "-" + iface;
}

UplinkKernelDrop::UplinkKernelDrop(const std::string& iface, net::Ipv4Addr vtep, std::uint16_t port,
                                   const std::string& pin_dir)
    : iface_(iface), vtep_(vtep), port_(port), pin_dir_(pin_dir) {
  const unsigned ifindex = ::if_nametoindex(iface.c_str());
  if (ifindex == 0) {
    what_ = "uplink " + iface + ": " + std::strerror(errno);
    return;
  }
  attach(ifindex);
  if (state_ != State::attached) {
    for (int* fd : {&link_fd_, &prog_fd_, &map_fd_})
      if (*fd >= 0) ::close(std::exchange(*fd, -1));
  }
}

void UplinkKernelDrop::attach(unsigned ifindex) {
  const bool want_pins = !pin_dir_.empty();
  if (want_pins && !make_dirs(pin_dir_)) {
    pin_note_ = "cannot create " + pin_dir_ + ": " + std::strerror(errno) + " (is bpffs mounted there?)";
  }
  const bool pins = want_pins && pin_note_.empty();
  const std::string map_pin = pin_dir_ + "/vnis", link_pin = pin_dir_ + "/link";

  // The map: a previous dataplane's (its VNIs and scope stay in force until we rewrite them),
  // else a new one.
  if (pins) map_fd_ = obj_get(map_pin);
  const bool map_inherited = map_fd_ >= 0;
  if (map_fd_ < 0) map_fd_ = create_map();
  if (map_fd_ < 0) {
    const int err = errno;
    state_ = err == ENOSYS ? State::unsupported : State::failed;
    what_ = std::string("creating the VNI map: ") + std::strerror(err) +
            (err == EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN, or root)" : "");
    return;
  }
  // Fail closed from the first frame: every datagram until the dataplane says otherwise.
  if (auto st = write_key(kDropAllKey, true); !st) {
    state_ = State::failed;
    what_ = st.error();
    return;
  }
  if (map_inherited) {
    // What the previous dataplane left, so that set_vnis() removes what we no longer serve.
    std::uint32_t key = 0, next = 0;
    bpf_attr a{};
    a.map_fd = static_cast<std::uint32_t>(map_fd_);
    a.key = 0;  // the first key
    a.next_key = reinterpret_cast<std::uintptr_t>(&next);
    while (bpf(BPF_MAP_GET_NEXT_KEY, &a) == 0) {
      if (next != kDropAllKey) vnis_.insert(next);
      key = next;
      a.key = reinterpret_cast<std::uintptr_t>(&key);
    }
  }

  const auto protocol_ip = static_cast<std::int32_t>(htons(0x0800));  // __sk_buff.protocol is big-endian
  const auto vtep_host = static_cast<std::int32_t>(ntohl(vtep_.to_network()));
  // Offsets into the Ethernet frame (the ingress hook runs with the MAC header in front).
  constexpr std::int16_t kDrop = 31, kPass = 33;  // indices of the two exits below
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
      /* 13 */ jne32_imm(0, port_, kPass - 14),
      /* 14 */ ld_abs(BPF_W, 46),                                             // VNI << 8 | reserved (too short: passes)
      /* 15 */ rsh32_imm(0, 8),
      /* 16 */ mov64_reg(7, 0),                                               // the VNI, kept across the calls
      /* 17 */ st_w(10, -4, static_cast<std::int32_t>(kDropAllKey)),          // scope `all`?
      /* 18 */ ld_map_fd(1, map_fd_),
      /* 19 */ insn(0, 0, 0, 0, 0),
      /* 20 */ mov64_reg(2, 10),
      /* 21 */ add64_imm(2, -4),
      /* 22 */ call(BPF_FUNC_map_lookup_elem),
      /* 23 */ jne64_imm(0, 0, kDrop - 24),
      /* 24 */ stx_w(10, -4, 7),                                              // one of our VNIs?
      /* 25 */ ld_map_fd(1, map_fd_),
      /* 26 */ insn(0, 0, 0, 0, 0),
      /* 27 */ mov64_reg(2, 10),
      /* 28 */ add64_imm(2, -4),
      /* 29 */ call(BPF_FUNC_map_lookup_elem),
      /* 30 */ jeq64_imm(0, 0, kPass - 31),
      /* 31 */ mov64_imm(0, TC_ACT_SHOT),
      /* 32 */ exit_insn(),
      /* 33 */ mov64_imm(0, kTcxNext),
      /* 34 */ exit_insn(),
  };
  static_assert(std::size(prog) == kPass + 2);
  char log[4096] = {};
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

  // A pinned link of a previous (crashed, or still running) dataplane: run our program in it,
  // atomically, so the uplink is never without the drop. One that no longer works (its
  // interface was deleted and made again) is replaced.
  if (pins) {
    link_fd_ = obj_get(link_pin);
    if (link_fd_ >= 0) {
      bpf_attr update{};
      update.link_update.link_fd = static_cast<std::uint32_t>(link_fd_);
      update.link_update.new_prog_fd = static_cast<std::uint32_t>(prog_fd_);
      if (bpf(BPF_LINK_UPDATE, &update) == 0) {
        took_over_ = true;
      } else {
        ::close(std::exchange(link_fd_, -1));
        ::unlink(link_pin.c_str());
      }
    }
  }
  if (link_fd_ < 0) {
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
  }
  state_ = State::attached;
  if (pins) {
    // Pin the map first: a link pinned beside a map that is not would be taken over later with
    // a fresh map, which is still correct, only forgetful.
    const bool map_ok = map_inherited || obj_pin(map_fd_, map_pin);
    const bool link_ok = took_over_ || obj_pin(link_fd_, link_pin);
    pinned_ = map_ok && link_ok;
    if (!pinned_) {
      pin_note_ = "pinning in " + pin_dir_ + ": " + std::strerror(errno) + " (is bpffs mounted there?)";
      ::unlink(link_pin.c_str());
      ::unlink(map_pin.c_str());
    }
  }
}

UplinkKernelDrop::~UplinkKernelDrop() {
  // An unpinned link detaches with its last descriptor; a pinned one stays in force for the
  // next dataplane (fail closed).
  for (int fd : {link_fd_, prog_fd_, map_fd_})
    if (fd >= 0) ::close(fd);
}

Status UplinkKernelDrop::write_key(std::uint32_t key, bool present) {
  bpf_attr a{};
  a.map_fd = static_cast<std::uint32_t>(map_fd_);
  a.key = reinterpret_cast<std::uintptr_t>(&key);
  const std::uint8_t value = 1;
  if (present) {
    a.value = reinterpret_cast<std::uintptr_t>(&value);
    a.flags = BPF_ANY;
    if (bpf(BPF_MAP_UPDATE_ELEM, &a) == 0) return {};
  } else if (bpf(BPF_MAP_DELETE_ELEM, &a) == 0 || errno == ENOENT) {
    return {};
  }
  return make_error("uplink drop map: " + std::string(present ? "adding" : "removing") + " key " + std::to_string(key) +
                    ": " + std::strerror(errno));
}

Status UplinkKernelDrop::set_scope(Scope scope) {
  if (state_ != State::attached) return {};
  if (auto st = write_key(kDropAllKey, scope == Scope::all); !st) return st;
  scope_ = scope;
  return {};
}

Status UplinkKernelDrop::set_vnis(const std::set<std::uint32_t>& vnis) {
  if (state_ != State::attached) return {};
  // Added first: a VNI moving between networks is never unprotected.
  for (std::uint32_t vni : vnis)
    if (!vnis_.count(vni))
      if (auto st = write_key(vni, true); !st) return st;
  for (std::uint32_t vni : vnis_)
    if (!vnis.count(vni))
      if (auto st = write_key(vni, false); !st) return st;
  vnis_ = vnis;
  return {};
}

const char* UplinkKernelDrop::name(State s) {
  switch (s) {
    case State::attached: return "attached";
    case State::unsupported: return "unsupported";
    case State::failed: return "failed";
  }
  return "failed";
}

const char* UplinkKernelDrop::name(Scope s) { return s == Scope::all ? "all" : "our_vnis"; }

std::string UplinkKernelDrop::describe() const {
  const std::string what = "VXLAN to " + vtep_.str() + ":" + std::to_string(port_) + " on " + iface_;
  switch (state_) {
    case State::attached: {
      std::string s = what + ": dropped at tc ingress once our AF_PACKET socket has it (no socket of the node reads it; " +
                      (scope_ == Scope::all ? std::string("every VNI")
                                            : std::string("only our VNIs: a kernel VXLAN device shares the port")) +
                      ")";
      if (pinned_) s += took_over_ ? "; took over the link pinned in " + pin_dir_ : "; pinned in " + pin_dir_;
      if (!pin_note_.empty())
        s += "; not pinned (" + pin_note_ + "): if the dataplane dies, the node's sockets see VXLAN until it restarts";
      return s;
    }
    case State::unsupported:
      return what + ": not dropped at tc ingress (" + what_ +
             "); the node's kernel still runs IP and UDP input on every frame, and only the port claim keeps "
             "other sockets from reading it";
    case State::failed:
      return what + ": not dropped at tc ingress: " + what_;
  }
  return what;
}

}  // namespace vxfed::dataplane
