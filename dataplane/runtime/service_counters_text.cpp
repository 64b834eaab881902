#include "dataplane/runtime/service_counters_text.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

namespace vxfed::dataplane {

namespace {

std::string protocol_name(std::uint32_t p) { return p == 6 ? "tcp" : p == 17 ? "udp" : std::to_string(p); }

}  // namespace

std::string service_counters_text(const v1::ServiceCountersReport& report) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"SERVICE", "VNI", "VIP:PORTS", "BACKEND:PORTS", "IN-ENTRY", "WEIGHT", "NEW-FLOWS", "FLOWS"});
  for (const auto& s : report.services()) {
    std::string vip = s.vip() + ":";
    std::string targets;
    for (int i = 0; i < s.ports_size(); ++i) {
      const auto& p = s.ports(i);
      vip += (i ? "," : "") + std::to_string(p.port()) + "/" + protocol_name(p.protocol());
      targets += (i ? "," : "") + std::to_string(p.target_port() ? p.target_port() : p.port());
    }
    if (s.backends_size() == 0) rows.push_back({s.id(), std::to_string(s.vni()), vip, "-", "-", "-", "0", "0"});
    for (const auto& b : s.backends()) {
      // The backend's ports: those its live flows go to, else the service's target ports.
      std::string ports;
      for (int i = 0; i < b.ports_size(); ++i) ports += (i ? "," : "") + std::to_string(b.ports(i));
      rows.push_back({s.id(), std::to_string(s.vni()), vip, b.ip() + ":" + (ports.empty() ? targets : ports),
                      b.in_entry() ? "yes" : "no", b.in_entry() ? std::to_string(b.weight()) : "-",
                      std::to_string(b.new_flows()), report.flows_counted() ? std::to_string(b.flows()) : "-"});
    }
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::ostringstream out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    out << line << "\n";
  }
  if (!report.flows_counted())
    out << "flows: not counted (no connection tables, or the workers' census did not finish)\n";
  else if (report.flows_truncated())
    out << "flows: more than the census holds; the figures are low\n";
  if (report.flows_elsewhere()) out << "flows to a VIP:port no service has now: " << report.flows_elsewhere() << "\n";
  return out.str();
}

}  // namespace vxfed::dataplane
