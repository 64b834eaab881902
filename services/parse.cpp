#include "services/parse.hpp"

#include <initializer_list>
#include <map>
#include <utility>

#include "common/yaml/reader.hpp"
#include "policy/names.hpp"
#include "policy/yaml_stream.hpp"
#include "services/annotations.hpp"

namespace vxfed::services {

namespace {

using yaml::Field;

std::string quoted(const std::string& text) { return "'" + text + "'"; }

// Collects errors instead of stopping at the first: each guarded step that fails (a
// yaml::FieldError thrown by the readers, caught here and never further) adds one line and
// the walk goes on. `object` ("Service default/web") is put in front of the lines of the
// object being read.
class Errors {
 public:
  explicit Errors(std::string prefix) : prefix_(std::move(prefix)) {}

  template <typename Step>
  bool guard(Step&& step) {
    try {
      step();
      return true;
    } catch (const yaml::FieldError& e) {
      add(e.message());
    } catch (const YAML::Exception& e) {  // yaml-cpp's own (a malformed node), never expected
      add(std::string("invalid YAML: ") + e.what());
    }
    return false;
  }
  void add(const std::string& message) { list_.push_back(prefix_ + (object_.empty() ? "" : object_ + ": ") + message); }
  void set_object(std::string object) { object_ = std::move(object); }
  std::vector<std::string>& list() { return list_; }

 private:
  std::string prefix_;
  std::string object_;
  std::vector<std::string> list_;
};

// A key of `f` read outside a guard: absent when `f` is not a mapping (a guard has reported
// that already), so that one wrong value gives one error and nothing escapes read_objects().
Field child(const Field& f, const std::string& key) {
  if (f.present() && !f.node().IsMap()) return Field(YAML::Node(YAML::NodeType::Undefined), f.path() + "." + key);
  return f[key];
}

// Reports `f` when it is present but not a mapping or has a key not in `keys`; false when it
// is not a mapping, so its reader stops with one error instead of one per field.
bool mapping(const Field& f, std::initializer_list<const char*> keys, Errors& errors) {
  errors.guard([&] { f.allow(keys); });
  return !f.present() || f.node().IsMap();
}

std::vector<Field> items(const Field& f, Errors& errors) {
  std::vector<Field> out;
  errors.guard([&] { out = f.items(); });
  return out;
}

Protocol read_protocol(const Field& f) {
  const std::string protocol = f.present() ? f.str() : "TCP";
  if (protocol == "TCP") return Protocol::Tcp;
  if (protocol == "UDP") return Protocol::Udp;
  if (protocol == "SCTP") f.fail(quoted(protocol) + " is not supported (vxfed balances TCP and UDP)");
  f.fail("must be TCP or UDP (got " + quoted(protocol) + ")");
}

// A port number that must be an integer: a quoted or non-numeric scalar is a name to
// Kubernetes (an IntOrString), and named ports are refused until supported.
std::uint16_t read_port_number(const Field& f, const std::string& what) {
  const YAML::Node& n = f.node();
  bool digits = n.IsScalar() && n.Tag() != "!" && !n.Scalar().empty();
  if (digits)
    for (char c : n.Scalar()) digits = digits && c >= '0' && c <= '9';
  if (n.IsScalar() && !digits)
    f.fail("named " + what + " " + quoted(n.Scalar()) + " is not supported: give the port number");
  return static_cast<std::uint16_t>(f.integer(1, 65535));
}

struct Meta {
  std::string name;
  std::string namespace_name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::string creation_timestamp;
};

// metadata: name, namespace, labels, annotations and creationTimestamp are read; the rest
// (uid, resourceVersion, managedFields, ownerReferences...) is the API server's and skipped.
// `label_name`: the name must be a DNS label (a Service's, and so a ServiceExport's), else a
// DNS subdomain (an EndpointSlice's).
Meta read_meta(const Field& obj, bool label_name, Errors& errors) {
  Meta m;
  const Field meta = obj["metadata"];
  errors.guard([&] {
    if (!meta.present()) meta.fail("is required");
    meta.expect_map();
  });
  if (!meta.present() || !meta.node().IsMap()) return m;
  errors.guard([&] {
    m.name = meta.required_str("name");
    const std::string why = label_name ? policy::check_dns_label(m.name) : policy::check_dns_subdomain(m.name);
    if (!why.empty()) meta["name"].fail(quoted(m.name) + " " + why);
  });
  errors.guard([&] {
    const Field ns = meta["namespace"];
    if (!ns.present()) ns.fail("is required (kubectl get -o yaml prints it; vxfedctl has no current namespace)");
    m.namespace_name = ns.str();
    if (const std::string why = policy::check_dns_label(m.namespace_name); !why.empty())
      ns.fail(quoted(m.namespace_name) + " " + why);
  });
  errors.guard([&] {
    for (const auto& entry : meta["labels"].entries())
      m.labels[entry.first] = Field(entry.second.node(), key_path(meta["labels"].path(), entry.first)).str();
  });
  errors.guard([&] {
    for (const auto& entry : meta["annotations"].entries())
      m.annotations[entry.first] = Field(entry.second.node(), key_path(meta["annotations"].path(), entry.first)).str();
  });
  errors.guard([&] {
    if (meta.has("creationTimestamp")) m.creation_timestamp = meta["creationTimestamp"].str();
  });
  return m;
}

class Reader {
 public:
  Reader(std::string cluster, Errors& errors) : cluster_(std::move(cluster)), errors_(errors) {}

  // One document: an object or a List of them.
  void document(const Field& doc) {
    if (!doc.present()) return;
    std::string kind;
    errors_.guard([&] {
      doc.expect_map();
      kind = doc.required_str("kind");
    });
    if (kind == "List" || (kind.size() > 4 && kind.ends_with("List"))) {
      for (const Field& item : items(doc["items"], errors_)) object(item);
      return;
    }
    if (!kind.empty()) object(doc);
  }

  Objects take() { return std::move(objects_); }

 private:
  void object(const Field& obj) {
    errors_.set_object("");
    std::string kind, api_version;
    errors_.guard([&] {
      obj.expect_map();
      kind = obj.required_str("kind");
      api_version = obj.required_str("apiVersion");
      const char* want = kind == "EndpointSlice" ? kEndpointSliceApiVersion
                         : kind == "ServiceExport" ? kServiceExportApiVersion
                                                   : "v1";
      if (kind != "Service" && kind != "EndpointSlice" && kind != "ServiceExport")
        obj["kind"].fail(quoted(kind) + " is not read by vxfed services (expected Service v1, EndpointSlice " +
                         kEndpointSliceApiVersion + " or ServiceExport " + kServiceExportApiVersion + ")");
      if (api_version != want)
        obj["apiVersion"].fail("must be " + std::string(want) + " for " + kind + " (got " + quoted(api_version) + ")");
    });
    if (kind.empty() || api_version.empty()) return;
    errors_.set_object(kind);  // until its name is read
    const Meta m = read_meta(obj, kind != "EndpointSlice", errors_);
    const std::string id = kind + " " + (m.name.empty() ? "(unnamed)" : m.namespace_name + "/" + m.name);
    errors_.set_object(id);
    once(obj, id, m);
    if (kind == "Service" && api_version == "v1") service(obj, m);
    if (kind == "EndpointSlice" && api_version == kEndpointSliceApiVersion) slice(obj, m);
    if (kind == "ServiceExport" && api_version == kServiceExportApiVersion) service_export(obj, m);
    errors_.set_object("");
  }

  // One apply holds each object once: a second copy would make the result depend on order.
  void once(const Field& obj, const std::string& id, const Meta& m) {
    if (m.name.empty()) return;
    const std::string where = obj.path().empty() ? "(top level)" : obj.path();
    const auto [it, inserted] = seen_.emplace(id, where);
    if (!inserted) errors_.add(where + ": appears twice (first at " + it->second + ")");
  }

  void service(const Field& obj, const Meta& m) {
    Service s;
    s.cluster = cluster_;
    s.key = {m.namespace_name, m.name};
    s.source_path = obj.path();
    const std::string annotations_path = obj["metadata"]["annotations"].path();
    errors_.guard([&] { s.strategy = read_strategy(m.annotations, annotations_path); });
    errors_.guard([&] { s.pinned_vip = read_vip(m.annotations, annotations_path); });
    const Field spec = obj["spec"];
    // What kubectl prints for a ClusterIP Service. clusterIP(s) are the cluster's own VIP and
    // ignored (the federation allocates one); selector is the cluster's business (backends
    // come from EndpointSlices); the rest is checked to be what vxfed does.
    errors_.guard([&] {
      if (!spec.present()) spec.fail("is required");
      spec.allow({"ports", "type", "sessionAffinity", "sessionAffinityConfig", "clusterIP", "clusterIPs", "selector",
                  "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy", "publishNotReadyAddresses"});
    });
    if (!spec.present() || !spec.node().IsMap()) return;
    errors_.guard([&] {
      const std::string type = spec.str("type", "ClusterIP");
      if (type != "ClusterIP")
        spec["type"].fail(quoted(type) + " is not supported: a global service is ClusterIP (its VIP comes from the "
                                         "federation's service range)");
    });
    errors_.guard([&] {
      const std::string affinity = spec.str("sessionAffinity", "None");
      if (affinity == "ClientIP")
        spec["sessionAffinity"].fail("'ClientIP' is not supported yet: vxfed keeps each flow on its backend "
                                     "(consistent hashing and connection tracking), not each client; use None");
      else if (affinity != "None")
        spec["sessionAffinity"].fail("must be None (got " + quoted(affinity) + ")");
      if (spec.has("sessionAffinityConfig") && affinity != "ClientIP")
        spec["sessionAffinityConfig"].fail("is read with sessionAffinity ClientIP only, which is not supported");
    });
    errors_.guard([&] {
      for (const Field& family : spec["ipFamilies"].items())
        if (family.str() != "IPv4") family.fail(quoted(family.str()) + " is not supported: vxfed services are IPv4");
    });
    errors_.guard([&] {
      const std::string policy = spec.str("ipFamilyPolicy", "SingleStack");
      if (policy != "SingleStack") spec["ipFamilyPolicy"].fail("must be SingleStack (got " + quoted(policy) + ")");
    });
    errors_.guard([&] {
      const std::string policy = spec.str("internalTrafficPolicy", "Cluster");
      if (policy != "Cluster")
        spec["internalTrafficPolicy"].fail("must be Cluster (got " + quoted(policy) +
                                           "): where traffic goes is the vxfed.io/strategy annotation's");
    });
    errors_.guard([&] {
      if (spec.boolean("publishNotReadyAddresses", false))
        spec["publishNotReadyAddresses"].fail("true is not supported: vxfed picks ready backends only");
    });
    const std::vector<Field> ports = items(spec["ports"], errors_);
    errors_.guard([&] {
      if (spec["ports"].present() && ports.empty()) spec["ports"].fail("must have at least one port");
      if (!spec["ports"].present()) spec["ports"].fail("is required (a ClusterIP Service has at least one port)");
    });
    std::map<std::string, std::string> names;                      // name -> path
    std::map<std::pair<int, int>, std::string> numbers;            // (protocol, port) -> path
    for (const Field& p : ports) {
      if (!mapping(p, {"name", "protocol", "port", "targetPort", "appProtocol"}, errors_)) continue;
      ServicePort port;
      bool ok = true;
      ok &= errors_.guard([&] {
        port.name = p.str("name", "");
        if (port.name.empty() && ports.size() > 1) p["name"].fail("is required when a Service has more than one port");
        if (!port.name.empty())
          if (const std::string why = policy::check_dns_label(port.name); !why.empty())
            p["name"].fail(quoted(port.name) + " " + why);
        if (!port.name.empty() && !names.emplace(port.name, p.path()).second)
          p["name"].fail(quoted(port.name) + " is used twice (first at " + names[port.name] + ")");
      });
      ok &= errors_.guard([&] { port.protocol = read_protocol(p["protocol"]); });
      ok &= errors_.guard([&] {
        if (!p.has("port")) p["port"].fail("is required");
        port.port = read_port_number(p["port"], "port");
      });
      ok &= errors_.guard([&] {
        port.target_port = p.has("targetPort") ? read_port_number(p["targetPort"], "targetPort") : port.port;
      });
      if (!ok) continue;
      errors_.guard([&] {
        const auto [it, inserted] = numbers.emplace(std::pair{static_cast<int>(port.protocol), int{port.port}}, p.path());
        if (!inserted)
          p["port"].fail(std::to_string(port.port) + "/" + protocol_name(port.protocol) + " is used twice (first at " +
                         it->second + ")");
        s.ports.push_back(port);
      });
    }
    objects_.services.push_back(std::move(s));
  }

  void slice(const Field& obj, const Meta& m) {
    EndpointSlice s;
    s.namespace_name = m.namespace_name;
    s.name = m.name;
    s.source_path = obj.path();
    s.cluster = cluster_;
    const std::string labels_path = obj["metadata"]["labels"].path();
    errors_.guard([&] {
      const auto it = m.labels.find(kServiceNameLabel);
      if (it == m.labels.end())
        yaml::fail(key_path(labels_path, kServiceNameLabel), "is required: it names the Service the slice belongs to");
      s.service_name = it->second;
      if (const std::string why = policy::check_dns_label(s.service_name); !why.empty())
        yaml::fail(key_path(labels_path, kServiceNameLabel), quoted(s.service_name) + " " + why);
    });
    errors_.guard([&] {
      const auto it = m.labels.find(kSourceClusterLabel);
      if (it == m.labels.end()) return;
      if (const std::string why = policy::check_dns_label(it->second); !why.empty())
        yaml::fail(key_path(labels_path, kSourceClusterLabel), quoted(it->second) + " is not a cluster name: " + why);
      s.cluster = it->second;
    });
    errors_.guard([&] {
      obj.allow({"apiVersion", "kind", "metadata", "addressType", "endpoints", "ports"});
      const Field type = obj["addressType"];
      if (!type.present()) type.fail("is required (IPv4)");
      if (type.str() != "IPv4") type.fail(quoted(type.str()) + " is not supported: vxfed services are IPv4");
    });
    for (const Field& p : items(obj["ports"], errors_)) {
      if (!mapping(p, {"name", "protocol", "port", "appProtocol"}, errors_)) continue;
      EndpointPort port;
      bool ok = true;
      ok &= errors_.guard([&] { port.name = p.str("name", ""); });
      ok &= errors_.guard([&] { port.protocol = read_protocol(p["protocol"]); });
      ok &= errors_.guard([&] {
        // Kubernetes allows a slice port without a number ("all ports"); a load balancer
        // needs the number to translate to.
        if (!p.has("port")) p["port"].fail("is required (the port the backends listen on)");
        port.port = read_port_number(p["port"], "port");
      });
      if (ok) s.ports.push_back(port);
    }
    for (const Field& e : items(obj["endpoints"], errors_)) {
      if (!mapping(e, {"addresses", "conditions", "hostname", "nodeName", "zone", "targetRef", "hints",
                       "deprecatedTopology"},
                   errors_))
        continue;
      Endpoint endpoint;
      bool ok = errors_.guard([&] {
        const std::vector<Field> addresses = e["addresses"].items();
        if (addresses.empty()) e["addresses"].fail("must have at least one address");
        for (const Field& a : addresses) {
          const std::string text = a.str();
          auto address = net::Ipv4Addr::parse(text);
          if (!address) a.fail(quoted(text) + " is not an IPv4 address: " + address.error());
          endpoint.addresses.push_back(*address);
        }
      });
      const Field conditions = child(e, "conditions");
      if (mapping(conditions, {"ready", "serving", "terminating"}, errors_))
        ok &= errors_.guard([&] { endpoint.ready = child(conditions, "ready").present() ? conditions.boolean("ready", true) : true; });
      if (ok) s.endpoints.push_back(std::move(endpoint));
    }
    objects_.slices.push_back(std::move(s));
  }

  void service_export(const Field& obj, const Meta& m) {
    ServiceExport x;
    x.cluster = cluster_;
    x.key = {m.namespace_name, m.name};
    x.source_path = obj.path();
    errors_.guard([&] {
      obj.allow({"apiVersion", "kind", "metadata", "spec", "status"});
      const Field spec = obj["spec"];
      if (spec.present()) spec.allow({});
    });
    errors_.guard([&] {
      const std::string path = obj["metadata"].path() + ".creationTimestamp";
      // The oldest export wins a conflict (the MCS API), so its age is required.
      if (m.creation_timestamp.empty())
        yaml::fail(path, "is required: the oldest export of a service wins when exports disagree");
      auto created = parse_timestamp(m.creation_timestamp);
      if (!created) yaml::fail(path, created.error());
      x.created_s = *created;
      x.created_text = m.creation_timestamp;
    });
    objects_.exports.push_back(std::move(x));
  }

  std::string cluster_;
  Errors& errors_;
  Objects objects_;
  std::map<std::string, std::string> seen_;  // "Kind ns/name" -> where it was first
};

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace

Result<std::int64_t> parse_timestamp(const std::string& text) {
  const std::string expected = quoted(text) + " is not a timestamp like 2026-12-06T12:16:00Z (RFC 3339, UTC)";
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  if (text.size() < 20 || text.back() != 'Z') return make_error(expected);
  const auto digits = [&](std::size_t at, std::size_t n, unsigned& out) {
    out = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      out = out * 10 + static_cast<unsigned>(text[i] - '0');
    }
    return true;
  };
  unsigned year, month, day, hour, minute, second;
  if (!digits(0, 4, year) || text[4] != '-' || !digits(5, 2, month) || text[7] != '-' || !digits(8, 2, day) ||
      (text[10] != 'T' && text[10] != 't') || !digits(11, 2, hour) || text[13] != ':' || !digits(14, 2, minute) ||
      text[16] != ':' || !digits(17, 2, second))
    return make_error(expected);
  if (text.size() > 20) {
    unsigned ignored;
    if (text[19] != '.' || text.size() == 21 || !digits(20, text.size() - 21, ignored)) return make_error(expected);
  }
  static constexpr unsigned kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1] || (month == 2 && day == 29 && !leap) ||
      hour > 23 || minute > 59 || second > 59)
    return make_error(expected);
  return days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
}

Parsed read_objects(const std::string& text, const std::string& cluster, const std::string& source) {
  Parsed out;
  Errors errors(source.empty() ? "" : source + ": ");
  if (const std::string why = policy::check_dns_label(cluster); !why.empty()) {
    errors.add("cluster " + quoted(cluster) + " " + why);
    out.errors = std::move(errors.list());
    return out;
  }
  // Document by document (policy/yaml_stream.hpp: not YAML::LoadAll, which can loop forever).
  std::vector<YAML::Node> docs;
  for (const policy::YamlDocument& d : policy::split_documents(text)) {
    try {
      YAML::Node node = YAML::Load(d.text);
      if (node.IsDefined() && !node.IsNull()) docs.push_back(std::move(node));
      else if (policy::has_content(d.text))
        errors.add("line " + std::to_string(d.first_line + 1) +
                   ": YAML syntax error: this document has text but reads as empty (a stray ',' or a null?)");
    } catch (const YAML::Exception& e) {
      errors.add("line " + std::to_string(d.first_line + e.mark.line + 1) + ", column " +
                 std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
    }
  }
  if (!errors.list().empty()) {
    out.errors = std::move(errors.list());
    return out;
  }
  Reader reader(cluster, errors);
  for (std::size_t i = 0; i < docs.size(); ++i)  // guarded too: no reader error may leave this function
    errors.guard([&] { reader.document(Field(docs[i], docs.size() > 1 ? "documents[" + std::to_string(i) + "]" : "")); });
  errors.set_object("");
  out.objects = reader.take();
  // An empty List counts too: an apply that applies nothing is a mistake worth naming.
  const Objects& o = out.objects;
  if (errors.list().empty() && o.services.empty() && o.slices.empty() && o.exports.empty())
    errors.add("no objects (expected Service, EndpointSlice or ServiceExport objects)");
  out.errors = std::move(errors.list());
  return out;
}

}  // namespace vxfed::services
