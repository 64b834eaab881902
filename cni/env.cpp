#include "cni/env.hpp"

#include <algorithm>
#include <cctype>

namespace vxfed::cni {

namespace {

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

const char* command_name(Command c) {
  switch (c) {
    case Command::kAdd: return "ADD";
    case Command::kDel: return "DEL";
    case Command::kCheck: return "CHECK";
    case Command::kVersion: return "VERSION";
    case Command::kGc: return "GC";
    case Command::kStatus: return "STATUS";
  }
  return "?";
}

const std::vector<std::string>& pod_arg_keys() {
  static const std::vector<std::string> keys = {"K8S_POD_NAMESPACE", "K8S_POD_NAME",
                                                "K8S_POD_INFRA_CONTAINER_ID", "K8S_POD_UID"};
  return keys;
}

std::optional<std::string> validate_container_id(const std::string& id) {
  // SPEC.md: alphanumeric first, then alphanumerics, '_', '.', '-'.
  if (id.empty()) return "the container id is empty";
  if (!alnum(id[0])) return "the container id '" + id + "' must start with a letter or digit";
  for (char c : id) {
    if (!alnum(c) && c != '_' && c != '.' && c != '-')
      return "the container id '" + id + "' contains '" + std::string(1, c) +
             "'; only letters, digits, '_', '.' and '-' are allowed";
  }
  return std::nullopt;
}

std::optional<std::string> validate_ifname(const std::string& name) {
  // SPEC.md: at most IFNAMSIZ-1 (15) bytes, not "." or "..", no '/', ':' or whitespace.
  if (name.empty()) return "the interface name is empty";
  if (name.size() > 15)
    return "the interface name '" + name + "' is " + std::to_string(name.size()) +
           " characters long; Linux allows at most 15";
  if (name == "." || name == "..") return "the interface name '" + name + "' is not allowed";
  for (char c : name) {
    if (c == '/' || c == ':' || std::isspace(static_cast<unsigned char>(c)) || c == '\0')
      return "the interface name '" + name + "' contains '" + std::string(1, c) +
             "'; '/', ':' and whitespace are not allowed";
  }
  return std::nullopt;
}

Expected<std::map<std::string, std::string>> parse_cni_args(const std::string& args) {
  std::map<std::string, std::string> out;
  for (const auto& pair : split(args, ';')) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0)
      return cni_error(kInvalidEnv, "CNI_ARGS: '" + pair + "' is not KEY=VALUE");
    out[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  bool ignore_unknown = false;
  if (auto it = out.find("IgnoreUnknown"); it != out.end()) {
    std::string v = it->second;
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    ignore_unknown = v == "true" || v == "1";
  }
  if (!ignore_unknown) {
    for (const auto& [key, value] : out) {
      if (key == "IgnoreUnknown") continue;
      const auto& known = pod_arg_keys();
      if (std::find(known.begin(), known.end(), key) == known.end() && key != "MAC" && key != "IP")
        return cni_error(kInvalidEnv, "CNI_ARGS: unknown key '" + key +
                                          "' (add IgnoreUnknown=true to pass keys vxfed ignores)");
    }
  }
  return out;
}

Expected<CniEnv> parse_env(const EnvLookup& lookup) {
  CniEnv env;
  const auto command = lookup("CNI_COMMAND");
  if (!command || command->empty()) return cni_error(kInvalidEnv, "CNI_COMMAND is not set");
  static const std::pair<const char*, Command> kCommands[] = {
      {"ADD", Command::kAdd},         {"DEL", Command::kDel}, {"CHECK", Command::kCheck},
      {"VERSION", Command::kVersion}, {"GC", Command::kGc},   {"STATUS", Command::kStatus}};
  bool found = false;
  for (const auto& [name, c] : kCommands) {
    if (*command == name) {
      env.command = c;
      found = true;
    }
  }
  if (!found)
    return cni_error(kInvalidEnv, "CNI_COMMAND '" + *command +
                                      "' is not one of ADD, DEL, CHECK, VERSION, GC, STATUS");
  if (env.command == Command::kVersion) return env;

  const bool per_container = env.command == Command::kAdd || env.command == Command::kDel ||
                             env.command == Command::kCheck;
  auto get = [&](const char* key) { return lookup(key).value_or(""); };
  env.container_id = get("CNI_CONTAINERID");
  env.netns = get("CNI_NETNS");
  env.ifname = get("CNI_IFNAME");
  env.args = get("CNI_ARGS");
  env.path = split(get("CNI_PATH"), ':');

  if (per_container) {
    if (env.container_id.empty()) return cni_error(kInvalidEnv, "CNI_CONTAINERID is not set");
    if (auto bad = validate_container_id(env.container_id))
      return cni_error(kInvalidEnv, "CNI_CONTAINERID: " + *bad);
    if (env.ifname.empty()) return cni_error(kInvalidEnv, "CNI_IFNAME is not set");
    if (auto bad = validate_ifname(env.ifname)) return cni_error(kInvalidEnv, "CNI_IFNAME: " + *bad);
    if (env.command != Command::kDel) {
      if (env.netns.empty()) return cni_error(kInvalidEnv, "CNI_NETNS is not set");
    }
    if (!env.netns.empty() && env.netns[0] != '/')
      return cni_error(kInvalidEnv, "CNI_NETNS '" + env.netns + "' is not an absolute path");
  }
  // DEL, GC and STATUS only run a delegate (IPAM) when they need one; ADD and CHECK always do.
  if ((env.command == Command::kAdd || env.command == Command::kCheck) && env.path.empty())
    return cni_error(kInvalidEnv, "CNI_PATH is not set; it lists the directories holding the IPAM plugin");
  auto args = parse_cni_args(env.args);
  if (!args) return args.error();
  env.arg_map = std::move(*args);
  return env;
}

}  // namespace vxfed::cni
