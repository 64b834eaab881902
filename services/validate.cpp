#include "services/validate.hpp"

#include "services/annotations.hpp"
#include "services/parse.hpp"
#include "services/vip_pool.hpp"

namespace vxfed::services {

namespace {

std::string quoted(const std::string& text) { return "'" + text + "'"; }

std::string join(const std::string& base, const std::string& rest) { return base.empty() ? rest : base + "." + rest; }

std::string cidrs_text(const std::vector<net::Ipv4Prefix>& cidrs) {
  std::string out;
  for (const auto& c : cidrs) out += (out.empty() ? "" : ", ") + c.str();
  return out.empty() ? "(none)" : out;
}

class Checker {
 public:
  Checker(const FederationView& federation, const std::string& source)
      : federation_(federation), prefix_(source.empty() ? "" : source + ": ") {}

  void fail(const std::string& object, const std::string& path, const std::string& reason) {
    errors_.push_back(prefix_ + object + ": " + (path.empty() ? "(top level)" : path) + ": " + reason);
  }

  bool known_cluster(const std::string& cluster) const { return federation_.cluster_cidrs.contains(cluster); }
  std::string known_clusters() const {
    std::string out;
    for (const auto& [name, cidrs] : federation_.cluster_cidrs) out += (out.empty() ? "" : ", ") + name;
    return out.empty() ? "(none)" : out;
  }

  void service(const Service& s) {
    const std::string id = "Service " + s.key.str();
    const std::string annotations = join(s.source_path, "metadata.annotations");
    if (!known_cluster(s.cluster))
      fail(id, "", "cluster " + quoted(s.cluster) + " is not in the federation (known: " + known_clusters() + ")");
    for (const auto& [cluster, weight] : s.strategy.weights)
      if (!known_cluster(cluster))
        fail(id, key_path(annotations, kWeightsAnnotation),
             "cluster " + quoted(cluster) + " is not in the federation (known: " + known_clusters() + ")");
    for (const auto& cluster : s.strategy.failover_order)
      if (!known_cluster(cluster))
        fail(id, key_path(annotations, kFailoverOrderAnnotation),
             "cluster " + quoted(cluster) + " is not in the federation (known: " + known_clusters() + ")");
    if (s.pinned_vip && !vip_allocatable(federation_.service_range, *s.pinned_vip))
      fail(id, key_path(annotations, kVipAnnotation),
           s.pinned_vip->str() + " is outside the service range " + federation_.service_range.str() +
               " (or is its network or broadcast address)");
  }

  void slice(const EndpointSlice& e, const std::vector<Service>& services) {
    const std::string id = "EndpointSlice " + e.namespace_name + "/" + e.name;
    const std::string labels = join(e.source_path, "metadata.labels");
    const Service* service = nullptr;
    for (const Service& s : services)
      if (s.key == ServiceKey{e.namespace_name, e.service_name}) service = &s;
    if (!service) {
      fail(id, key_path(labels, kServiceNameLabel),
           "Service " + e.namespace_name + "/" + e.service_name + " is not in this input (apply a slice with its Service)");
    } else {
      // The slice's ports are the Service's, by name and protocol, on its targetPorts (what
      // the EndpointSlice controller writes); both ways, so that no VIP port lacks a backend port.
      for (std::size_t i = 0; i < e.ports.size(); ++i) {
        const EndpointPort& p = e.ports[i];
        const std::string path = join(e.source_path, "ports[" + std::to_string(i) + "]");
        const ServicePort* match = nullptr;
        for (const ServicePort& sp : service->ports)
          if (sp.name == p.name && sp.protocol == p.protocol) match = &sp;
        if (!match)
          fail(id, path + ".name", "no port named " + quoted(p.name) + "/" + protocol_name(p.protocol) + " in Service " +
                                       service->key.str() + ": the slice's ports must be the Service's");
        else if (match->target_port != p.port)
          fail(id, path + ".port", std::to_string(p.port) + " does not match Service " + service->key.str() +
                                       " port " + quoted(p.name) + "'s targetPort " + std::to_string(match->target_port));
      }
      for (const ServicePort& sp : service->ports) {
        bool found = false;
        for (const EndpointPort& p : e.ports) found = found || (sp.name == p.name && sp.protocol == p.protocol);
        if (!found)
          fail(id, join(e.source_path, "ports"), "has no port " + quoted(sp.name) + "/" + protocol_name(sp.protocol) +
                                                     " of Service " + service->key.str() + " (targetPort " +
                                                     std::to_string(sp.target_port) + ")");
      }
    }
    const auto own = federation_.cluster_cidrs.find(e.cluster);
    if (own == federation_.cluster_cidrs.end()) {
      fail(id, key_path(labels, kSourceClusterLabel),
           "cluster " + quoted(e.cluster) + " is not in the federation (known: " + known_clusters() + ")");
      return;
    }
    for (std::size_t i = 0; i < e.endpoints.size(); ++i)
      for (std::size_t j = 0; j < e.endpoints[i].addresses.size(); ++j) {
        const net::Ipv4Addr a = e.endpoints[i].addresses[j];
        bool inside = false;
        for (const auto& cidr : own->second) inside = inside || cidr.contains(a);
        if (inside) continue;
        std::string elsewhere;
        for (const auto& [cluster, cidrs] : federation_.cluster_cidrs)
          for (const auto& cidr : cidrs)
            if (cidr.contains(a)) elsewhere = "; it is in cluster " + quoted(cluster) + "'s " + cidr.str();
        fail(id, join(e.source_path, "endpoints[" + std::to_string(i) + "].addresses[" + std::to_string(j) + "]"),
             a.str() + " is outside cluster " + quoted(e.cluster) + "'s pod CIDRs (" + cidrs_text(own->second) + ")" +
                 elsewhere);
      }
  }

  void service_export(const ServiceExport& x, const std::vector<Service>& services) {
    bool found = false;
    for (const Service& s : services) found = found || (s.key == x.key && s.cluster == x.cluster);
    if (!found)
      fail("ServiceExport " + x.key.str(), join(x.source_path, "metadata.name"),
           "Service " + x.key.str() + " is not in this input (export a Service applied with it)");
  }

  std::vector<std::string> take() { return std::move(errors_); }

 private:
  const FederationView& federation_;
  std::string prefix_;
  std::vector<std::string> errors_;
};

}  // namespace

std::vector<std::string> validate(const Objects& objects, const FederationView& federation, const std::string& source) {
  Checker checker(federation, source);
  for (const Service& s : objects.services) checker.service(s);
  for (const EndpointSlice& e : objects.slices) checker.slice(e, objects.services);
  for (const ServiceExport& x : objects.exports) checker.service_export(x, objects.services);
  return checker.take();
}

Result<Objects> parse_and_validate(const std::string& text, const std::string& cluster, const FederationView& federation,
                                   const std::string& source) {
  Parsed parsed = read_objects(text, cluster, source);
  if (parsed.errors.empty()) parsed.errors = validate(parsed.objects, federation, source);
  if (parsed.errors.empty()) return std::move(parsed.objects);
  std::string message;
  for (const auto& e : parsed.errors) message += (message.empty() ? "" : "\n") + e;
  return make_error(std::move(message));
}

}  // namespace vxfed::services
