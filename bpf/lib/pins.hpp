// bpffs: making sure it is mounted, and the pin directory layout of a pod.
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"

namespace vxfed::bpf::detail {

// Mounts bpffs on /sys/fs/bpf when pin_root lies under it and nothing is mounted there yet,
// then creates pin_root/pods.
Status ensure_pin_root(const std::string& pin_root);

std::string pods_dir(const std::string& pin_root);
std::string pod_dir(const std::string& pin_root, const std::string& key);

// The names pinned in a pod directory: maps first, then programs.
const std::vector<std::string>& pinned_map_names();
const std::vector<std::string>& pinned_prog_names();

// Unlinks every entry of a pod directory and the directory itself; absent is fine.
Status remove_pod_dir(const std::string& dir);

// Subdirectory names of pods_dir (the pinned pod keys), sorted.
Result<std::vector<std::string>> list_pod_dirs(const std::string& pin_root);

}  // namespace vxfed::bpf::detail
