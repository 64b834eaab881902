// Entering a network namespace: the one way vxfed does it (docs/conventions.md: network
// namespaces). The work runs on a fresh thread that joins the namespace and ends with it, so
// the calling thread, and every other thread of the process, never changes namespace and
// nothing has to be switched back (a failed switch back would leave later host-side work
// running in a pod). Sockets the work opens stay bound to the namespace they were opened in
// and can be used from any thread afterwards.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>

#include "common/result.hpp"

namespace vxfed {

struct NetnsId {
  dev_t dev = 0;
  ino_t ino = 0;
};

// The identity (device, inode) of the namespace file at path; error if it is not there.
Result<NetnsId> netns_identity(const std::string& path);

// Runs fn inside the network namespace at `path` (/var/run/netns/x, /proc/PID/ns/net).
Status run_in_netns(const std::string& path, const std::function<Status()>& fn);

// The same for a namespace already open as `netns_fd` (the caller keeps and closes it);
// `what` names it in errors ("the pod's network namespace /var/run/netns/x").
Status run_in_netns(int netns_fd, const std::string& what, const std::function<Status()>& fn);

}  // namespace vxfed
