// Delegation to another CNI plugin (IPAM), the way the reference plugins' invoke package does
// it: the plugin named by `type` is looked up in the CNI_PATH directories, run with the same
// environment (CNI_COMMAND and, for GC's per-attachment DEL, CNI_CONTAINERID/IFNAME replaced),
// the network configuration on stdin, and its stdout parsed as a result or a CNI error.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cni/cni_result.hpp"
#include "cni/env.hpp"
#include "cni/errors.hpp"
#include "cni/netconf.hpp"

namespace vxfed::cni {

struct ExecOutput {
  int exit_code = -1;          // -1: killed by a signal or timed out
  std::string out;
  std::string err;
};

// First executable `type` in `dirs`; code 7 names every directory searched when absent.
Expected<std::string> find_plugin(const std::string& type, const std::vector<std::string>& dirs);

// Runs `program` with `env_overrides` on top of the current environment, `input` on stdin.
// Kills it after `timeout_ms`.
Expected<ExecOutput> exec_plugin(const std::string& program, const std::map<std::string, std::string>& env_overrides,
                                 const std::string& input, int timeout_ms);

class IpamDelegate {
 public:
  IpamDelegate(const NetConf& conf, const CniEnv& env) : conf_(conf), env_(env) {}

  Expected<CniResult> add();
  // container id / ifname default to the invocation's; GC passes those of stale attachments.
  Done del(const std::string& container_id = {}, const std::string& ifname = {}, const std::string& netns = {});
  Done check();

 private:
  Expected<ExecOutput> run(const std::string& command, const std::string& container_id, const std::string& ifname,
                           const std::string& netns, const std::string& version);
  // Runs `command`; on "incompatible version" from a plugin that predates our cniVersion,
  // asks it for VERSION and retries once at the highest version both speak.
  Expected<ExecOutput> run_negotiated(const std::string& command, const std::string& container_id,
                                      const std::string& ifname, const std::string& netns);
  CniError failure(const std::string& command, const ExecOutput& out) const;

  const NetConf& conf_;
  const CniEnv& env_;
};

}  // namespace vxfed::cni
