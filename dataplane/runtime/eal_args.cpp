#include "dataplane/runtime/eal_args.hpp"

#include <sched.h>

#include <cctype>
#include <set>
#include <string_view>

namespace vxfed::dataplane {

namespace {

enum class Arg { kNone, kRequired, kOptional };

// DPDK 22.11's EAL options (`dpdk-testpmd -h`; lib/eal/common/eal_common_options.c).
const std::map<std::string, Arg>& long_options() {
  static const std::map<std::string, Arg> table = {
      {"base-virtaddr", Arg::kRequired}, {"create-uio-dev", Arg::kNone},     {"file-prefix", Arg::kRequired},
      {"force-max-simd-bitwidth", Arg::kRequired},                          {"help", Arg::kNone},
      {"huge-dir", Arg::kRequired},      {"huge-unlink", Arg::kOptional},    {"huge-worker-stack", Arg::kOptional},
      {"in-memory", Arg::kNone},         {"iova-mode", Arg::kRequired},      {"lcores", Arg::kRequired},
      {"legacy-mem", Arg::kNone},        {"log-level", Arg::kRequired},      {"main-lcore", Arg::kRequired},
      {"match-allocations", Arg::kNone}, {"mbuf-pool-ops-name", Arg::kRequired},
      {"no-hpet", Arg::kNone},           {"no-huge", Arg::kNone},            {"no-pci", Arg::kNone},
      {"no-shconf", Arg::kNone},         {"no-telemetry", Arg::kNone},       {"proc-type", Arg::kRequired},
      {"single-file-segments", Arg::kNone}, {"socket-limit", Arg::kRequired}, {"socket-mem", Arg::kRequired},
      {"syslog", Arg::kRequired},        {"telemetry", Arg::kNone},          {"trace", Arg::kRequired},
      {"trace-bufsz", Arg::kRequired},   {"trace-dir", Arg::kRequired},      {"trace-mode", Arg::kRequired},
      {"vdev", Arg::kRequired},          {"vfio-intr", Arg::kRequired},      {"vfio-vf-token", Arg::kRequired},
      {"vmware-tsc-map", Arg::kNone},    {"allow", Arg::kRequired},          {"block", Arg::kRequired},
  };
  return table;
}

// Short options: all take a value except -h and -v.
const std::map<char, std::string>& short_options() {
  static const std::map<char, std::string> table = {
      {'a', "allow"}, {'b', "block"}, {'c', "coremask"}, {'d', "driver"}, {'l', "corelist"}, {'m', "memory"},
      {'n', "channels"}, {'r', "ranks"}, {'s', "service-coremask"}, {'S', "service-corelist"},
  };
  return table;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

Result<unsigned> parse_number(std::string_view s, const std::string& what) {
  if (!all_digits(s) || s.size() > 9) return make_error(what + ": '" + std::string(s) + "' is not a number");
  return static_cast<unsigned>(std::stoul(std::string(s)));
}

// "a" or "a-b" into `out`.
Status add_range(std::string_view item, std::set<unsigned>& out, const std::string& what) {
  const auto dash = item.find('-');
  auto first = parse_number(item.substr(0, dash), what);
  if (!first) return make_error(first.error());
  unsigned last = *first;
  if (dash != std::string_view::npos) {
    auto l = parse_number(item.substr(dash + 1), what);
    if (!l) return make_error(l.error());
    last = *l;
  }
  if (last < *first) return make_error(what + ": range '" + std::string(item) + "' runs backwards");
  if (last >= 1024) return make_error(what + ": lcore " + std::to_string(last) + " is above RTE_MAX_LCORE");
  for (unsigned i = *first; i <= last; ++i) out.insert(i);
  return {};
}

Result<EalDevice> parse_device(const std::string& spec, const std::string& option) {
  EalDevice d;
  std::size_t pos = spec.find(',');
  d.name = spec.substr(0, pos);
  if (d.name.empty()) return make_error(option + " '" + spec + "': no device name");
  while (pos != std::string::npos) {
    const std::size_t next = spec.find(',', pos + 1);
    const std::string kv = spec.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    const auto eq = kv.find('=');
    if (kv.empty() || eq == 0) return make_error(option + " '" + spec + "': empty or nameless device argument");
    d.kvargs[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    pos = next;
  }
  return d;
}

bool looks_like_pci(const std::string& s) {
  // [dddd:]bb:dd.f
  std::size_t colons = 0, dots = 0;
  for (char c : s) {
    if (c == ':') ++colons;
    else if (c == '.') ++dots;
    else if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return (colons == 1 || colons == 2) && dots == 1;
}

}  // namespace

Result<unsigned> count_corelist(const std::string& list, std::set<unsigned>* cpus) {
  std::set<unsigned> lcores;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t comma = list.find(',', pos);
    const std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (auto st = add_range(item, lcores, "-l '" + list + "'"); !st) return make_error(st.error());
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (cpus) cpus->insert(lcores.begin(), lcores.end());  // -l: an lcore runs on the CPU of its number
  return static_cast<unsigned>(lcores.size());
}

Result<unsigned> count_lcore_map(const std::string& map, std::set<unsigned>* cpus) {
  const std::string what = "--lcores '" + map + "'";
  std::set<unsigned> lcores;
  std::size_t i = 0;
  // One set: a number, a range, or a parenthesised list of them.
  const auto read_set = [&](std::set<unsigned>& into) -> Status {
    if (i < map.size() && map[i] == '(') {
      const std::size_t close = map.find(')', i);
      if (close == std::string::npos) return make_error(what + ": '(' without ')'");
      const std::string inner = map.substr(i + 1, close - i - 1);
      std::size_t p = 0;
      while (true) {
        const std::size_t comma = inner.find(',', p);
        if (auto st = add_range(inner.substr(p, comma == std::string::npos ? std::string::npos : comma - p), into, what); !st)
          return st;
        if (comma == std::string::npos) break;
        p = comma + 1;
      }
      i = close + 1;
      return {};
    }
    std::size_t end = i;
    while (end < map.size() && (std::isdigit(static_cast<unsigned char>(map[end])) || map[end] == '-')) ++end;
    if (end == i) return make_error(what + ": expected an lcore number at offset " + std::to_string(i));
    auto st = add_range(std::string_view(map).substr(i, end - i), into, what);
    i = end;
    return st;
  };
  while (i < map.size()) {
    std::set<unsigned> group;
    if (auto st = read_set(group); !st) return make_error(st.error());
    lcores.insert(group.begin(), group.end());
    if (i < map.size() && map[i] == '@') {
      ++i;
      std::set<unsigned> on;
      if (auto st = read_set(on); !st) return make_error(st.error());
      if (cpus) cpus->insert(on.begin(), on.end());
    } else if (cpus) {
      cpus->insert(group.begin(), group.end());  // no '@': each lcore on the CPU of its number
    }
    if (i < map.size()) {
      if (map[i] != ',') return make_error(what + ": unexpected '" + std::string(1, map[i]) + "'");
      ++i;
      if (i == map.size()) return make_error(what + ": trailing ','");
    }
  }
  if (lcores.empty()) return make_error(what + ": no lcores");
  return static_cast<unsigned>(lcores.size());
}

Result<EalSummary> parse_eal_args(const std::vector<std::string>& args) {
  EalSummary s;
  std::string cores_from;  // which of -l, -c, --lcores gave the lcores
  bool block_given = false;
  const auto set_lcores = [&](const std::string& option, const std::string& value, Result<unsigned> n) -> Status {
    if (!n) return make_error(n.error());
    if (!cores_from.empty())
      return make_error(option + ": the lcores are already given by " + cores_from + " (use one of -l, -c, --lcores)");
    cores_from = option;
    s.lcores = *n;
    s.lcores_given_by = option + " '" + value + "'";
    return {};
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string name, value;
    bool has_value = false;
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      const auto eq = a.find('=');
      name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      auto it = long_options().find(name);
      if (it == long_options().end()) return make_error("EAL option " + a + " is not an option of DPDK 22.11's EAL");
      if (eq != std::string::npos) {
        if (it->second == Arg::kNone) return make_error("EAL option --" + name + " takes no value");
        value = a.substr(eq + 1);
        has_value = true;
      } else if (it->second == Arg::kRequired) {
        if (i + 1 >= args.size()) return make_error("EAL option --" + name + " needs a value");
        value = args[++i];
        has_value = true;
      }
    } else if (a.size() >= 2 && a[0] == '-' && a[1] != '-') {
      const char c = a[1];
      if (c == 'h' || c == 'v') {
        if (a.size() > 2) return make_error("EAL option " + a + ": -" + std::string(1, c) + " takes no value");
        name = c == 'h' ? "help" : "version";
      } else {
        auto it = short_options().find(c);
        if (it == short_options().end()) return make_error("EAL option " + a + " is not an option of DPDK 22.11's EAL");
        name = it->second;
        if (a.size() > 2) {
          value = a.substr(2);
        } else {
          if (i + 1 >= args.size()) return make_error("EAL option -" + std::string(1, c) + " needs a value");
          value = args[++i];
        }
        has_value = true;
      }
    } else {
      return make_error("'" + a + "' before `--` is not an EAL option (the forwarder's options follow `--`)");
    }
    (void)has_value;

    if (name == "corelist") {
      if (auto st = set_lcores("-l", value, count_corelist(value, &s.cpus)); !st) return make_error(st.error());
    } else if (name == "lcores") {
      if (auto st = set_lcores("--lcores", value, count_lcore_map(value, &s.cpus)); !st) return make_error(st.error());
    } else if (name == "coremask") {
      std::string hex = value.rfind("0x", 0) == 0 || value.rfind("0X", 0) == 0 ? value.substr(2) : value;
      unsigned bits = 0;
      std::set<unsigned> mask_cpus;
      for (std::size_t k = 0; k < hex.size(); ++k) {
        const char ch = hex[k];
        if (!std::isxdigit(static_cast<unsigned char>(ch))) return make_error("-c '" + value + "' is not a hexadecimal mask");
        const unsigned v = static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0' : (std::tolower(ch) - 'a' + 10));
        bits += static_cast<unsigned>(__builtin_popcount(v));
        const unsigned base = static_cast<unsigned>(4 * (hex.size() - 1 - k));  // the last digit holds CPUs 0-3
        for (unsigned b = 0; b < 4; ++b)
          if (v & (1u << b)) mask_cpus.insert(base + b);
      }
      if (hex.empty() || bits == 0) return make_error("-c '" + value + "' selects no core");
      if (auto st = set_lcores("-c", value, bits); !st) return make_error(st.error());
      s.cpus = mask_cpus;
    } else if (name == "vdev") {
      auto d = parse_device(value, "--vdev");
      if (!d) return make_error(d.error());
      s.vdevs.push_back(*d);
    } else if (name == "allow") {
      if (block_given) return make_error("-a/--allow and -b/--block cannot be used together");
      auto d = parse_device(value, "-a");
      if (!d) return make_error(d.error());
      s.allowed.push_back(*d);
    } else if (name == "block") {
      if (!s.allowed.empty()) return make_error("-a/--allow and -b/--block cannot be used together");
      block_given = true;
    } else if (name == "memory" || name == "channels" || name == "ranks" || name == "main-lcore") {
      if (auto n = parse_number(value, "-" + name); !n) return make_error(n.error());
    } else if (name == "iova-mode") {
      if (value != "pa" && value != "va") return make_error("--iova-mode '" + value + "': expected pa or va");
    } else if (name == "proc-type") {
      if (value != "primary" && value != "secondary" && value != "auto")
        return make_error("--proc-type '" + value + "': expected primary, secondary or auto");
    } else if (name == "file-prefix") {
      if (value.empty() || value.find('/') != std::string::npos)
        return make_error("--file-prefix '" + value + "': must be a non-empty name without '/'");
      s.file_prefix = value;
    } else if (name == "no-huge") {
      s.no_huge = true;
    } else if (name == "in-memory") {
      s.in_memory = true;
    } else if (name == "no-pci") {
      s.no_pci = true;
    }
  }
  if (s.in_memory && s.no_huge)
    return make_error("--in-memory with --no-huge: EAL cannot run in memory without hugepages; drop one of them "
                      "(without hugepages use --no-huge -m MB --file-prefix NAME)");
  return s;
}

std::set<unsigned> process_cpus() {
  std::set<unsigned> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.insert(c);
  return out;
}

namespace {

// "0-1,4": a CPU set as taskset and cpuset files print it.
std::string cpu_list(const std::set<unsigned>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    unsigned first = *it, last = first;
    for (++it; it != cpus.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ",";
    out += std::to_string(first) + (last != first ? "-" + std::to_string(last) : "");
  }
  return out.empty() ? "none" : out;
}

}  // namespace

Status check_eal_for_options(const EalSummary& eal, const Options& o, const std::set<unsigned>& allowed_cpus) {
  if (eal.lcores && *eal.lcores < o.queues + 1)
    return make_error("--queues " + std::to_string(o.queues) + " needs " + std::to_string(o.queues + 1) +
                      " EAL lcores (the control thread + one per worker), " + eal.lcores_given_by + " gives " +
                      std::to_string(*eal.lcores) + ": e.g. -l 1-" + std::to_string(o.queues + 1));
  // EAL pins each lcore's thread to its CPU: one outside the affinity (the container's cpuset,
  // taskset) fails rte_eal_init, however valid the list reads.
  std::set<unsigned> outside;
  for (unsigned c : eal.cpus)
    if (!allowed_cpus.count(c)) outside.insert(c);
  if (!outside.empty())
    return make_error(eal.lcores_given_by + ": CPU " + cpu_list(outside) + " is not in this process's CPU affinity (" +
                      cpu_list(allowed_cpus) + "), so EAL cannot start an lcore there; name CPUs of " +
                      cpu_list(allowed_cpus) + ", or leave out -l and EAL takes the affinity's CPUs");
  // --uplink-iface: our own sockets, no EAL device (the interface is looked up at start).
  if (!o.uplink_iface.empty()) return {};
  const EalDevice* uplink = nullptr;
  for (const auto& d : eal.vdevs)
    if (d.name == o.uplink) uplink = &d;
  for (const auto& d : eal.allowed)
    if (d.name == o.uplink) uplink = &d;
  if (!uplink) {
    const bool index = all_digits(o.uplink);
    const bool pci = looks_like_pci(o.uplink) && !eal.no_pci && eal.allowed.empty();
    if (!index && !pci)
      return make_error("--uplink " + o.uplink + ": no EAL option creates this device (give it with --vdev " +
                        o.uplink + ",... or -a " + o.uplink + ")");
    return {};
  }
  if (uplink->name.rfind("net_af_packet", 0) == 0) {
    if (!uplink->kvargs.count("iface") || uplink->kvargs.at("iface").empty())
      return make_error("--vdev " + uplink->name + ": an af_packet port needs iface=INTERFACE");
    unsigned qpairs = 1;
    if (auto it = uplink->kvargs.find("qpairs"); it != uplink->kvargs.end()) {
      auto n = parse_number(it->second, "--vdev " + uplink->name + " qpairs");
      if (!n) return make_error(n.error());
      qpairs = *n;
    }
    if (qpairs != o.queues)
      return make_error("uplink " + o.uplink + " is an af_packet port with qpairs=" + std::to_string(qpairs) +
                        " but --queues is " + std::to_string(o.queues) + ": give qpairs=" + std::to_string(o.queues) +
                        " (every af_packet queue must have a worker)");
  }
  return {};
}

}  // namespace vxfed::dataplane
