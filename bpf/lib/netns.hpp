// Running a piece of work inside another network namespace.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>

#include "common/result.hpp"

namespace vxfed::bpf::detail {

struct NetnsId {
  dev_t dev = 0;
  ino_t ino = 0;
};

// The identity (device, inode) of the namespace file at path; error if it is not there.
Result<NetnsId> netns_identity(const std::string& path);

// Runs fn on a fresh thread that has joined the netns at path, so that the caller's thread
// (and the rest of the process) never changes namespace. Sockets fn opens stay in the netns.
Status run_in_netns(const std::string& path, const std::function<Status()>& fn);

}  // namespace vxfed::bpf::detail
