#include "cni/records.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace vxfed::cni {

std::string host_iface_name(const std::string& container_id, const std::string& ifname) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;  // FNV prime
  };
  for (char c : container_id) mix(static_cast<unsigned char>(c));
  mix('/');
  for (char c : ifname) mix(static_cast<unsigned char>(c));
  char buf[16];
  std::snprintf(buf, sizeof buf, "vxf%012llx", static_cast<unsigned long long>(h & 0xffffffffffffull));
  return buf;
}

std::string write_record(const AttachmentRecord& r) {
  nlohmann::json j = {{"containerID", r.container_id}, {"ifname", r.ifname},
                      {"configName", r.config_name},   {"network", r.network},
                      {"netns", r.netns},              {"hostIface", r.host_iface},
                      {"address", r.address},          {"mac", r.mac},
                      {"ipamType", r.ipam_type},       {"createdUnixMs", r.created_unix_ms}};
  return j.dump(2) + "\n";
}

Expected<AttachmentRecord> parse_record(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return cni_error(kDecodeFailure, "attachment record is not a JSON object");
  AttachmentRecord r;
  try {
    r.container_id = j.at("containerID").get<std::string>();
    r.ifname = j.at("ifname").get<std::string>();
    r.config_name = j.value("configName", "");
    r.network = j.value("network", "");
    r.netns = j.value("netns", "");
    r.host_iface = j.at("hostIface").get<std::string>();
    r.address = j.value("address", "");
    r.mac = j.value("mac", "");
    r.ipam_type = j.value("ipamType", "");
    r.created_unix_ms = j.value("createdUnixMs", std::uint64_t{0});
  } catch (const nlohmann::json::exception& e) {
    return cni_error(kDecodeFailure, std::string("attachment record: ") + e.what());
  }
  return r;
}

std::string write_queue(const std::vector<PendingDetach>& q) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& d : q)
    j.push_back({{"containerID", d.container_id}, {"ifname", d.ifname}, {"network", d.network},
                 {"queuedUnixMs", d.queued_unix_ms}, {"attempts", d.attempts}});
  return j.dump(2) + "\n";
}

Expected<std::vector<PendingDetach>> parse_queue(const std::string& text) {
  std::vector<PendingDetach> q;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return q;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    return cni_error(kDecodeFailure, "the pending-detach queue is not a JSON array");
  try {
    for (const auto& e : j) {
      PendingDetach d;
      d.container_id = e.at("containerID").get<std::string>();
      d.ifname = e.at("ifname").get<std::string>();
      d.network = e.value("network", "");
      d.queued_unix_ms = e.value("queuedUnixMs", std::uint64_t{0});
      d.attempts = e.value("attempts", std::uint32_t{0});
      q.push_back(std::move(d));
    }
  } catch (const nlohmann::json::exception& e) {
    return cni_error(kDecodeFailure, std::string("the pending-detach queue: ") + e.what());
  }
  return q;
}

void enqueue(std::vector<PendingDetach>& q, const PendingDetach& d) {
  if (std::find(q.begin(), q.end(), d) == q.end()) q.push_back(d);
}

bool drop_queued(std::vector<PendingDetach>& q, const std::string& container_id, const std::string& ifname) {
  const auto before = q.size();
  std::erase_if(q, [&](const PendingDetach& d) { return d.container_id == container_id && d.ifname == ifname; });
  return q.size() != before;
}

}  // namespace vxfed::cni
