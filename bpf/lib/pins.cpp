#include "bpf/lib/pins.hpp"

#include <cstdlib>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/mount.h>
#include <sys/statfs.h>

#include <fmt/format.h>

#include "bpf/lib/vxfed_bpf.hpp"

namespace vxfed::bpf {

std::string default_pin_root() {
  const char* env = std::getenv("VXFED_BPF_PIN_ROOT");
  return env && *env ? std::string(env) : std::string("/sys/fs/bpf/vxfed");
}

}  // namespace vxfed::bpf

namespace vxfed::bpf::detail {
namespace {
constexpr long kBpfFsMagic = 0xcafe4a11;
constexpr const char* kBpfFsMount = "/sys/fs/bpf";

bool is_bpffs(const char* path) {
  struct statfs st {};
  return statfs(path, &st) == 0 && st.f_type == kBpfFsMagic;
}
}  // namespace

std::string pods_dir(const std::string& pin_root) { return pin_root + "/pods"; }
std::string pod_dir(const std::string& pin_root, const std::string& key) { return pods_dir(pin_root) + "/" + key; }

const std::vector<std::string>& pinned_map_names() {
  static const std::vector<std::string> names = {"config", "rate_state", "rules", "class_counters", "stats", "meta"};
  return names;
}
const std::vector<std::string>& pinned_prog_names() {
  static const std::vector<std::string> names = {"vxfed_egress", "vxfed_ingress"};
  return names;
}

Status ensure_pin_root(const std::string& pin_root) {
  namespace fs = std::filesystem;
  if (pin_root.rfind(kBpfFsMount, 0) == 0 && !is_bpffs(kBpfFsMount)) {
    std::error_code ec;
    fs::create_directories(kBpfFsMount, ec);
    if (mount("bpf", kBpfFsMount, "bpf", 0, "mode=0700") != 0)
      return make_error(fmt::format("bpffs is not mounted on {} and mounting it failed: {} (needs root)", kBpfFsMount,
                                    strerror(errno)));
  }
  std::error_code ec;
  fs::create_directories(pods_dir(pin_root), ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", pods_dir(pin_root), ec.message()));
  if (!is_bpffs(pin_root.c_str()))
    return make_error(fmt::format("{} is not on a bpf filesystem: pins would not work there", pin_root));
  return {};
}

Status remove_pod_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {};
  for (const auto& entry : fs::directory_iterator(dir, ec)) fs::remove(entry.path(), ec);
  fs::remove(dir, ec);
  if (ec) return make_error(fmt::format("cannot remove the pins in {}: {}", dir, ec.message()));
  return {};
}

Result<std::vector<std::string>> list_pod_dirs(const std::string& pin_root) {
  namespace fs = std::filesystem;
  std::vector<std::string> keys;
  std::error_code ec;
  if (!fs::exists(pods_dir(pin_root), ec)) return keys;
  for (const auto& entry : fs::directory_iterator(pods_dir(pin_root), ec))
    if (entry.is_directory()) keys.push_back(entry.path().filename().string());
  if (ec) return make_error(fmt::format("cannot list {}: {}", pods_dir(pin_root), ec.message()));
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace vxfed::bpf::detail
