// What the plugin keeps on disk between invocations, as pure (de)serialisers:
//  - the host-side interface name derived from (container id, ifname);
//  - one attachment record per ADD, so that DEL without prevResult and GC know what to undo;
//  - the queue of detaches that vxfedd has not yet acknowledged (it was down at DEL time).
// The files themselves are written by state_store.cpp under a flock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cni/errors.hpp"

namespace vxfed::cni {

// "vxf" + 12 hex digits of a 64-bit FNV-1a hash of "<container id>/<ifname>": 15 characters,
// the longest a Linux interface name may be, stable across invocations so DEL finds it again.
std::string host_iface_name(const std::string& container_id, const std::string& ifname);

struct AttachmentRecord {
  std::string container_id;
  std::string ifname;
  std::string config_name;     // the CNI network configuration's name (GC scope)
  std::string network;         // the vxfed network
  std::string netns;
  std::string host_iface;
  std::string address;         // CIDR from IPAM
  std::string mac;
  std::string ipam_type;
  std::uint64_t created_unix_ms = 0;
};

std::string write_record(const AttachmentRecord& r);
Expected<AttachmentRecord> parse_record(const std::string& text);

struct PendingDetach {
  std::string container_id;
  std::string ifname;
  std::string network;
  std::uint64_t queued_unix_ms = 0;
  std::uint32_t attempts = 0;
  bool operator==(const PendingDetach& o) const {
    return container_id == o.container_id && ifname == o.ifname;
  }
};

std::string write_queue(const std::vector<PendingDetach>& q);
// An empty text is an empty queue. A corrupt queue is an error (the caller keeps the file
// aside rather than losing the entries it may still hold).
Expected<std::vector<PendingDetach>> parse_queue(const std::string& text);
// Adds `d` unless the same (container id, ifname) is already queued.
void enqueue(std::vector<PendingDetach>& q, const PendingDetach& d);
// Drops any queued detach for (container id, ifname): a new ADD supersedes it.
bool drop_queued(std::vector<PendingDetach>& q, const std::string& container_id, const std::string& ifname);

}  // namespace vxfed::cni
