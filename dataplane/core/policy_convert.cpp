// NetworkPolicy (proto) -> policy::PolicyTables: every rule the tables' readers rely on is
// checked here, so that a worker's lookups never index out of range and the binary searches
// see sorted, disjoint input (policy/tables.hpp).
#include <set>

#include "dataplane/core/policy_entry.hpp"

namespace vxfed::dataplane {
namespace {

std::string field(const std::string& list, int i) { return list + "[" + std::to_string(i) + "]"; }

class Converter {
 public:
  Converter(const v1::NetworkPolicy& in, const std::string& where) : in_(in), where_(where) {}

  Result<PolicySpec> run() {
    auto t = std::make_shared<policy::PolicyTables>();
    if (!port_sets(*t)) return error();
    if (in_.local_ingress_size() != in_.local_egress_size())
      return fail("local_egress: " + std::to_string(in_.local_egress_size()) + " tables, local_ingress has " +
                  std::to_string(in_.local_ingress_size()) + " (one of each per LocalIndex)");
    for (int i = 0; i < in_.local_ingress_size(); ++i) {
      t->local_ingress.push_back({});
      if (!direction(in_.local_ingress(i), field("local_ingress", i), &t->local_ingress.back())) return error();
    }
    for (int i = 0; i < in_.local_egress_size(); ++i) {
      t->local_egress.push_back({});
      if (!direction(in_.local_egress(i), field("local_egress", i), &t->local_egress.back())) return error();
    }
    if (in_.remote_egress_size() > 0) t->remote_egress_of.assign(65536, policy::PolicyTables::kNoTable);
    for (int i = 0; i < in_.remote_egress_size(); ++i) {
      const auto& r = in_.remote_egress(i);
      const std::string at = field("remote_egress", i);
      if (r.identities_size() == 0) return fail(at + ".identities: empty (a table for no identity)");
      for (int k = 0; k < r.identities_size(); ++k) {
        const std::uint32_t id = r.identities(k);
        const std::string f = at + field(".identities", k);
        if (id > 0xffff) return fail(f + ": " + std::to_string(id) + " is not 0..65535");
        if (t->remote_egress_of[id] != policy::PolicyTables::kNoTable)
          return fail(f + ": identity " + std::to_string(id) + " is already in remote_egress[" +
                      std::to_string(t->remote_egress_of[id]) + "] (an identity has one table)");
        t->remote_egress_of[id] = static_cast<std::uint32_t>(i);
      }
      t->remote_egress_tables.push_back({});
      if (!direction(r.table(), at + ".table", &t->remote_egress_tables.back())) return error();
    }
    PolicySpec spec;
    spec.vni = in_.vni();
    std::set<std::string> seen;
    for (int i = 0; i < in_.endpoints_size(); ++i) {
      const auto& e = in_.endpoints(i);
      const std::string at = field("endpoints", i);
      if (e.endpoint_id().empty()) return fail(at + ".endpoint_id: empty");
      if (!seen.insert(e.endpoint_id()).second)
        return fail(at + ".endpoint_id: \"" + e.endpoint_id() + "\" listed twice");
      if (e.local() >= static_cast<std::uint32_t>(in_.local_ingress_size()))
        return fail(at + ".local: " + std::to_string(e.local()) + " is not below the " +
                    std::to_string(in_.local_ingress_size()) + " local tables");
      spec.local_of_endpoint[e.endpoint_id()] = e.local();
    }
    auto trust = IdentityTrust::create(in_, where_);
    if (!trust) return make_error(trust.error());
    if (!trust->empty()) spec.trust = std::make_shared<const IdentityTrust>(std::move(*trust));
    spec.tables = std::move(t);
    spec.given = in_;
    return spec;
  }

 private:
  bool port_sets(policy::PolicyTables& t) {
    if (in_.port_sets_size() < 2)
      return failed("port_sets: " + std::to_string(in_.port_sets_size()) +
                    " sets, at least 2 ([0] nothing, [1] everything)");
    for (int i = 0; i < in_.port_sets_size(); ++i) {
      const auto& s = in_.port_sets(i);
      const std::string at = field("port_sets", i);
      if (i == 0 && (s.every_protocol() || s.spans_size() != 0))
        return failed(at + ": must be nothing (every_protocol false, no spans)");
      if (i == 1 && (!s.every_protocol() || s.spans_size() != 0))
        return failed(at + ": must be everything (every_protocol true, no spans)");
      if (s.every_protocol() && s.spans_size() != 0) return failed(at + ": every_protocol with spans");
      policy::PortSet set;
      set.every_protocol = s.every_protocol();
      for (int k = 0; k < s.spans_size(); ++k) {
        const auto& sp = s.spans(k);
        const std::string f = at + field(".spans", k);
        if (sp.protocol() > 255) return failed(f + ".protocol: " + std::to_string(sp.protocol()) + " is not 0..255");
        if (sp.first() > 0xffff || sp.last() > 0xffff || sp.first() > sp.last())
          return failed(f + ": ports " + std::to_string(sp.first()) + ".." + std::to_string(sp.last()) +
                        " are not a range within 0..65535");
        const policy::PortSpan span{static_cast<std::uint8_t>(sp.protocol()), static_cast<std::uint16_t>(sp.first()),
                                    static_cast<std::uint16_t>(sp.last())};
        if (!set.spans.empty()) {
          const auto& prev = set.spans.back();
          if (span.protocol < prev.protocol || (span.protocol == prev.protocol && span.first <= prev.last))
            return failed(f + ": not after spans[" + std::to_string(k - 1) +
                          "] (sorted by protocol and first, disjoint)");
        }
        set.spans.push_back(span);
      }
      t.port_sets.push_back(std::move(set));
    }
    return true;
  }

  bool port_set_id(std::uint32_t id, const std::string& f) {
    if (id < static_cast<std::uint32_t>(in_.port_sets_size())) return true;
    return failed(f + ": port set " + std::to_string(id) + " is not below the " +
                  std::to_string(in_.port_sets_size()) + " port_sets");
  }

  bool direction(const v1::PolicyDirection& d, const std::string& at, policy::DirectionTable* out) {
    out->isolated = d.isolated();
    if (!port_set_id(d.any_peer(), at + ".any_peer") || !port_set_id(d.some_selector(), at + ".some_selector"))
      return false;
    out->any_peer = d.any_peer();
    out->some_selector = d.some_selector();
    for (int k = 0; k < d.peers_size(); ++k) {
      const auto& p = d.peers(k);
      const std::string f = at + field(".peers", k);
      if (p.identity() > 0xffff) return failed(f + ".identity: " + std::to_string(p.identity()) + " is not 0..65535");
      if (k > 0 && p.identity() <= d.peers(k - 1).identity())
        return failed(f + ".identity: " + std::to_string(p.identity()) + " not above peers[" + std::to_string(k - 1) +
                      "]'s (sorted by identity, unique)");
      if (!port_set_id(p.ports(), f + ".ports")) return false;
      out->peers.push_back({static_cast<std::uint16_t>(p.identity()), p.ports()});
    }
    policy::index_peers(*out);
    for (int k = 0; k < d.addresses_size(); ++k) {
      const auto& a = d.addresses(k);
      const std::string f = at + field(".addresses", k);
      if (a.first() > a.last()) return failed(f + ": first above last");
      if (k > 0 && a.first() <= d.addresses(k - 1).last())
        return failed(f + ": not after addresses[" + std::to_string(k - 1) + "] (sorted by first, disjoint)");
      if (!port_set_id(a.ports(), f + ".ports")) return false;
      out->addresses.push_back({a.first(), a.last(), a.ports()});
    }
    return true;
  }

  bool failed(const std::string& what) {
    message_ = where_ + ": " + what;
    return false;
  }
  Error error() const { return make_error(message_); }
  Error fail(const std::string& what) {
    failed(what);
    return error();
  }

  const v1::NetworkPolicy& in_;
  const std::string& where_;
  std::string message_;
};

}  // namespace

Result<PolicySpec> convert_network_policy(const v1::NetworkPolicy& in, const std::string& where) {
  return Converter(in, where).run();
}

}  // namespace vxfed::dataplane
