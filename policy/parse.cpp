#include "policy/parse.hpp"

#include <initializer_list>
#include <map>
#include <utility>

#include "common/yaml/reader.hpp"
#include "policy/identity.hpp"
#include "policy/names.hpp"
#include "policy/yaml_stream.hpp"

namespace vxfed::policy {

namespace {

using yaml::Field;

// Collects errors instead of stopping at the first: each guarded step that fails (a
// yaml::FieldError thrown by the readers, caught here and never further) adds one line and
// the walk goes on with the next field.
class Errors {
 public:
  explicit Errors(std::string prefix) : prefix_(std::move(prefix)) {}

  template <typename Step>
  void guard(Step&& step) {
    try {
      step();
    } catch (const yaml::FieldError& e) {
      add(e.message());
    } catch (const YAML::Exception& e) {  // yaml-cpp's own (a malformed node), never expected
      add(std::string("invalid YAML: ") + e.what());
    }
  }
  void add(const std::string& message) { list_.push_back(prefix_ + message); }
  std::vector<std::string>& list() { return list_; }

 private:
  std::string prefix_;
  std::vector<std::string> list_;
};

// The path of a mapping key that may hold '.' or '/' (label keys, annotations):
// metadata.labels["app.kubernetes.io/name"], so the path stays readable.
std::string key_path(const std::string& base, const std::string& key) {
  if (key.find_first_of("./") == std::string::npos) return base.empty() ? key : base + "." + key;
  return base + "[\"" + key + "\"]";
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

// A key of `f` read outside a guard: absent when `f` is not a mapping (a guard has reported
// that already), so that one wrong value gives one error and nothing escapes read_objects().
Field child(const Field& f, const std::string& key) {
  if (f.present() && !f.node().IsMap()) return Field(YAML::Node(YAML::NodeType::Undefined), f.path() + "." + key);
  return f[key];
}

void check(const std::string& path, const std::string& text, const std::string& why) {
  if (!why.empty()) yaml::fail(path, quoted(text) + " " + why);
}

// Reports `f` when it is present but not a mapping, or has a key not in `keys`; false when it
// is not a mapping, so that its reader stops there with one error instead of one per field.
bool mapping(const Field& f, std::initializer_list<const char*> keys, Errors& errors) {
  errors.guard([&] { f.allow(keys); });
  return !f.present() || f.node().IsMap();
}

Labels read_labels(const Field& f, bool pod_selector, Errors& errors) {
  Labels out;
  errors.guard([&] {
    for (const auto& entry : f.entries()) {
      // Named, not a structured binding: clang 14 (the fuzz build) cannot capture those.
      const std::string& key = entry.first;
      const Field& value = entry.second;
      const std::string path = key_path(f.path(), key);
      errors.guard([&] {
        check(path, key, check_label_key(key));
        if (pod_selector && is_volatile_label(key))
          yaml::fail(path, "selects on " + quoted(key) +
                               ", which vxfed leaves out of pod identities (it changes with every rollout or run; "
                               "docs/policy.md): this selector could never match");
        const std::string v = Field(value.node(), path).str();
        check(path, v, check_label_value(v));
        out[key] = v;
      });
    }
  });
  return out;
}

Operator read_operator(const Field& f) {
  const std::string op = f.str();
  if (op == "In") return Operator::In;
  if (op == "NotIn") return Operator::NotIn;
  if (op == "Exists") return Operator::Exists;
  if (op == "DoesNotExist") return Operator::DoesNotExist;
  f.fail("must be In, NotIn, Exists or DoesNotExist (got " + quoted(op) + ")");
}

// A LabelSelector; pod_selector: it selects pods, so it may not name a volatile label.
LabelSelector read_selector(const Field& f, bool pod_selector, Errors& errors) {
  LabelSelector out;
  if (!mapping(f, {"matchLabels", "matchExpressions"}, errors)) return out;
  out.match_labels = read_labels(child(f, "matchLabels"), pod_selector, errors);
  std::vector<Field> expressions;
  errors.guard([&] { expressions = child(f, "matchExpressions").items(); });
  for (const Field& e : expressions) {
    Requirement r;
    bool ok = true;
    const auto step = [&](auto&& fn) {
      const std::size_t before = errors.list().size();
      errors.guard(fn);
      ok = ok && errors.list().size() == before;
    };
    if (!mapping(e, {"key", "operator", "values"}, errors)) continue;
    step([&] {
      r.key = e.required_str("key");
      check(e["key"].path(), r.key, check_label_key(r.key));
      if (pod_selector && is_volatile_label(r.key))
        e["key"].fail("selects on " + quoted(r.key) +
                      ", which vxfed leaves out of pod identities (it changes with every rollout or run; "
                      "docs/policy.md): this selector could never match");
    });
    step([&] { r.op = read_operator(e["operator"]); });
    step([&] {
      const Field values = e["values"];
      for (const Field& v : values.items()) {
        r.values.push_back(v.str());
        check(v.path(), r.values.back(), check_label_value(r.values.back()));
      }
    });
    if (!ok) continue;
    errors.guard([&] {
      const bool needs_values = r.op == Operator::In || r.op == Operator::NotIn;
      if (needs_values && r.values.empty())
        e["values"].fail("must be non-empty when operator is " + e["operator"].str());
      if (!needs_values && !r.values.empty())
        e["values"].fail("must be empty when operator is " + e["operator"].str());
      out.match_expressions.push_back(r);
    });
  }
  return out;
}

IpBlock read_ip_block(const Field& f, Errors& errors) {
  IpBlock out;
  if (!mapping(f, {"cidr", "except"}, errors)) return out;
  bool have_cidr = false;
  errors.guard([&] {
    const std::string text = f.required_str("cidr");
    auto cidr = net::Ipv4Prefix::parse(text);
    if (!cidr) {
      if (text.find(':') != std::string::npos)
        f["cidr"].fail(quoted(text) + " is an IPv6 CIDR: vxfed networks carry IPv4 only (refused until supported)");
      f["cidr"].fail(cidr.error());
    }
    out.cidr = *cidr;
    have_cidr = true;
  });
  std::vector<Field> excepts;
  errors.guard([&] { excepts = child(f, "except").items(); });
  for (const Field& e : excepts) {
    errors.guard([&] {
      const std::string text = e.str();
      auto prefix = net::Ipv4Prefix::parse(text);
      if (!prefix) e.fail(prefix.error());
      // As the API server: an except must be a strict subset of the cidr.
      if (have_cidr && (!out.cidr.contains(*prefix) || prefix->len == out.cidr.len))
        e.fail(quoted(text) + " must lie strictly inside cidr " + out.cidr.str());
      out.except.push_back(*prefix);
    });
  }
  return out;
}

Peer read_peer(const Field& f, Errors& errors) {
  Peer out;
  if (!mapping(f, {"podSelector", "namespaceSelector", "ipBlock"}, errors)) return out;
  errors.guard([&] {
    const bool selectors = f.has("podSelector") || f.has("namespaceSelector");
    if (f.has("ipBlock") && selectors)
      f.fail("ipBlock cannot be combined with podSelector or namespaceSelector in one peer (make them two entries)");
    if (!f.has("ipBlock") && !selectors)
      f.fail("must have podSelector, namespaceSelector or ipBlock (Kubernetes refuses an empty peer; "
             "to match every peer, leave out from/to)");
  });
  if (const Field s = child(f, "podSelector"); s.present()) out.pod_selector = read_selector(s, true, errors);
  if (const Field s = child(f, "namespaceSelector"); s.present()) out.namespace_selector = read_selector(s, false, errors);
  if (const Field b = child(f, "ipBlock"); b.present()) out.ip_block = read_ip_block(b, errors);
  return out;
}

Port read_port(const Field& f, Errors& errors) {
  Port out;
  if (!mapping(f, {"protocol", "port", "endPort"}, errors)) return out;
  errors.guard([&] {
    const std::string protocol = f.str("protocol", "TCP");
    if (protocol == "TCP") out.protocol = Protocol::Tcp;
    else if (protocol == "UDP") out.protocol = Protocol::Udp;
    else if (protocol == "SCTP") f["protocol"].fail("SCTP is refused until supported (vxfed enforces TCP and UDP)");
    else f["protocol"].fail("must be TCP or UDP (got " + quoted(protocol) + ")");
  });
  const Field port = child(f, "port");
  bool named = false;
  errors.guard([&] {
    if (!port.present()) return;
    // A quoted scalar ("80") is a string to Kubernetes too (an IntOrString), so a named port.
    const YAML::Node& n = port.node();
    bool digits = n.IsScalar() && n.Tag() != "!" && !n.Scalar().empty();
    if (digits)
      for (char c : n.Scalar()) digits = digits && c >= '0' && c <= '9';
    if (n.IsScalar() && !digits) {
      named = true;
      port.fail("named port " + quoted(n.Scalar()) + " is refused until supported: give the port number");
    }
    out.port = static_cast<std::uint16_t>(port.integer(1, 65535));
  });
  const Field end = child(f, "endPort");
  errors.guard([&] {
    if (!end.present()) return;
    const auto value = static_cast<std::uint16_t>(end.integer(1, 65535));
    if (named) end.fail("requires a numeric port (port is a name)");
    if (!port.present()) end.fail("requires a numeric port (port is not set)");
    if (out.port && value < *out.port) end.fail("must be >= port (" + std::to_string(*out.port) + ")");
    if (out.port) out.end_port = value;
  });
  return out;
}

Rule read_rule(const Field& f, const char* peers_key, Errors& errors) {
  Rule out;
  if (!mapping(f, {peers_key, "ports"}, errors)) return out;
  std::vector<Field> peers, ports;
  errors.guard([&] { peers = child(f, peers_key).items(); });
  for (const Field& p : peers) out.peers.push_back(read_peer(p, errors));
  errors.guard([&] { ports = child(f, "ports").items(); });
  for (const Field& p : ports) out.ports.push_back(read_port(p, errors));
  return out;
}

// policy-for: "NS/NAD" or "NAD" (the policy's own namespace), comma-separated.
std::vector<NadRef> read_policy_for(const std::string& text, const std::string& own_namespace, const std::string& path) {
  std::vector<NadRef> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    if (item.empty()) yaml::fail(path, quoted(text) + " has an empty entry: expected NAMESPACE/NAD[,NAMESPACE/NAD...]");
    NadRef ref;
    if (const auto slash = item.find('/'); slash != std::string::npos) {
      ref.namespace_name = item.substr(0, slash);
      ref.name = item.substr(slash + 1);
      if (const std::string why = check_dns_label(ref.namespace_name); !why.empty())
        yaml::fail(path, quoted(ref.namespace_name) + " is not a namespace name: " + why);
    } else {
      ref.namespace_name = own_namespace;
      ref.name = item;
    }
    if (const std::string why = check_dns_subdomain(ref.name); !why.empty())
      yaml::fail(path, quoted(ref.name) + " is not a NAD name: " + why);
    out.push_back(ref);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

struct Meta {
  std::string name;
  std::string namespace_name;
  Labels labels;
  std::map<std::string, std::string> annotations;
};

// metadata: only name, namespace, labels and annotations are read; the rest (uid,
// resourceVersion, managedFields...) is the API server's and skipped.
Meta read_meta(const Field& obj, bool namespaced, bool dns_label_name, Errors& errors) {
  Meta m;
  const Field meta = obj["metadata"];
  errors.guard([&] {
    if (!meta.present()) meta.fail("is required");
    meta.expect_map();
  });
  if (!meta.present() || !meta.node().IsMap()) return m;
  errors.guard([&] {
    m.name = meta.required_str("name");
    check(meta["name"].path(), m.name, dns_label_name ? check_dns_label(m.name) : check_dns_subdomain(m.name));
  });
  if (namespaced)
    errors.guard([&] {
      const Field ns = meta["namespace"];
      if (!ns.present()) ns.fail("is required (kubectl get -o yaml prints it; vxfedctl has no current namespace)");
      m.namespace_name = ns.str();
      check(ns.path(), m.namespace_name, check_dns_label(m.namespace_name));
    });
  m.labels = read_labels(meta["labels"], false, errors);
  errors.guard([&] {
    for (const auto& [key, value] : meta["annotations"].entries())
      m.annotations[key] = Field(value.node(), key_path(meta["annotations"].path(), key)).str();
  });
  return m;
}

class Reader {
 public:
  Reader(std::string cluster, Errors& errors) : cluster_(std::move(cluster)), errors_(errors) {}

  // One document: an object or a List of them.
  void document(const Field& doc) {
    if (!doc.present()) return;  // an empty document ("---" at the end)
    std::string kind;
    errors_.guard([&] {
      doc.expect_map();
      kind = doc.required_str("kind");
    });
    if (kind == "List" || (kind.size() > 4 && kind.ends_with("List"))) {
      errors_.guard([&] {
        for (const Field& item : doc["items"].items()) object(item);
      });
      return;
    }
    if (!kind.empty()) object(doc);
  }

  Objects take() { return std::move(objects_); }

 private:
  void object(const Field& obj) {
    std::string kind, api_version;
    errors_.guard([&] {
      obj.expect_map();
      kind = obj.required_str("kind");
      api_version = obj.required_str("apiVersion");
      const char* want = kind == "MultiNetworkPolicy" ? kPolicyApiVersion : "v1";
      if (kind != "MultiNetworkPolicy" && kind != "Namespace" && kind != "Pod")
        obj["kind"].fail(quoted(kind) + " is not read by vxfed (expected MultiNetworkPolicy " + kPolicyApiVersion +
                         ", Namespace v1 or Pod v1)");
      if (api_version != want)
        obj["apiVersion"].fail("must be " + std::string(want) + " for " + kind + " (got " + quoted(api_version) +
                               (kind == "MultiNetworkPolicy" ? "; other versions are refused until supported)" : ")"));
    });
    if (kind.empty() || api_version.empty()) return;
    if (kind == "MultiNetworkPolicy" && api_version == kPolicyApiVersion) policy(obj);
    if (kind == "Namespace" && api_version == "v1") ns(obj);
    if (kind == "Pod" && api_version == "v1") pod(obj);
  }

  // One apply holds each object once: a second copy would make the result depend on order.
  void once(const Field& obj, const std::string& kind, const Meta& m) {
    if (m.name.empty()) return;
    const std::string id = kind + " " + (m.namespace_name.empty() ? "" : m.namespace_name + "/") + m.name;
    const std::string where = obj.path().empty() ? "(top level)" : obj.path();
    const auto [it, inserted] = seen_.emplace(id, where);
    if (!inserted) errors_.add(where + ": " + id + " appears twice (first at " + it->second + ")");
  }

  void policy(const Field& obj) {
    Policy p;
    p.cluster = cluster_;
    const Meta m = read_meta(obj, true, false, errors_);
    once(obj, "MultiNetworkPolicy", m);
    p.name = m.name;
    p.namespace_name = m.namespace_name;
    errors_.guard([&] {
      const std::string path = key_path(obj["metadata"]["annotations"].path(), kPolicyForAnnotation);
      const auto it = m.annotations.find(kPolicyForAnnotation);
      if (it == m.annotations.end())
        yaml::fail(path, "is required: it names the networks the policy is for (NAMESPACE/NAD, comma-separated)");
      if (!p.namespace_name.empty()) p.policy_for = read_policy_for(it->second, p.namespace_name, path);
    });
    const Field spec = obj["spec"];
    errors_.guard([&] {
      if (!spec.present()) spec.fail("is required");
      spec.allow({"podSelector", "policyTypes", "ingress", "egress"});
    });
    p.pod_selector = read_selector(child(spec, "podSelector"), true, errors_);
    bool types_given = false;
    errors_.guard([&] {
      for (const Field& t : child(spec, "policyTypes").items()) {
        types_given = true;
        const std::string type = t.str();
        if (type == "Ingress") p.ingress_type = true;
        else if (type == "Egress") p.egress_type = true;
        else t.fail("must be Ingress or Egress (got " + quoted(type) + ")");
      }
    });
    std::vector<Field> ingress, egress;
    errors_.guard([&] { ingress = child(spec, "ingress").items(); });
    for (const Field& r : ingress) p.ingress.push_back(read_rule(r, "from", errors_));
    errors_.guard([&] { egress = child(spec, "egress").items(); });
    for (const Field& r : egress) p.egress.push_back(read_rule(r, "to", errors_));
    // Kubernetes' defaults: no policyTypes means Ingress, and Egress too when there are
    // egress rules.
    if (!types_given) {
      p.ingress_type = true;
      p.egress_type = !p.egress.empty();
    }
    objects_.policies.push_back(std::move(p));
  }

  void ns(const Field& obj) {
    Meta m = read_meta(obj, false, true, errors_);
    once(obj, "Namespace", m);
    objects_.namespaces.push_back(Namespace{cluster_, m.name, std::move(m.labels), std::move(m.annotations)});
  }

  void pod(const Field& obj) {
    Meta m = read_meta(obj, true, false, errors_);
    once(obj, "Pod", m);
    objects_.pods.push_back(Pod{cluster_, m.namespace_name, m.name, std::move(m.labels), std::move(m.annotations)});
  }

  std::string cluster_;
  Errors& errors_;
  Objects objects_;
  std::map<std::string, std::string> seen_;  // "Kind ns/name" -> where it was first
};

}  // namespace

Parsed read_objects(const std::string& text, const std::string& cluster, const std::string& source) {
  Parsed out;
  Errors errors(source.empty() ? "" : source + ": ");
  if (const std::string why = check_dns_label(cluster); !why.empty()) {
    errors.add("cluster " + quoted(cluster) + " " + why);
    out.errors = std::move(errors.list());
    return out;
  }
  // Document by document (policy/yaml_stream.hpp: not YAML::LoadAll).
  std::vector<YAML::Node> docs;
  for (const YamlDocument& d : split_documents(text)) {
    try {
      YAML::Node node = YAML::Load(d.text);
      if (node.IsDefined() && !node.IsNull()) docs.push_back(std::move(node));
      else if (has_content(d.text))
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
  const std::size_t non_empty = docs.size();
  Reader reader(cluster, errors);
  for (std::size_t i = 0; i < docs.size(); ++i)  // guarded too: no reader error may leave this function
    errors.guard([&] { reader.document(Field(docs[i], non_empty > 1 ? "documents[" + std::to_string(i) + "]" : "")); });
  out.objects = reader.take();
  // An empty List counts too (found by policy_parse_fuzz): an apply of nothing is a mistake worth naming.
  const Objects& o = out.objects;
  if (errors.list().empty() && (non_empty == 0 || (o.policies.empty() && o.namespaces.empty() && o.pods.empty())))
    errors.add("no objects (expected MultiNetworkPolicy, Namespace or Pod objects)");
  out.errors = std::move(errors.list());
  return out;
}

Result<Objects> parse_objects(const std::string& text, const std::string& cluster, const std::string& source) {
  Parsed parsed = read_objects(text, cluster, source);
  if (parsed.errors.empty()) return std::move(parsed.objects);
  std::string message;
  for (const auto& e : parsed.errors) message += (message.empty() ? "" : "\n") + e;
  return make_error(std::move(message));
}

}  // namespace vxfed::policy
