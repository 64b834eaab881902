// NetworkPolicy.clusters -> IdentityTrust: see policy_trust.hpp. Checked here whole, so that
// the new-flow decision's binary searches see sorted, disjoint input.
#include "dataplane/core/policy_trust.hpp"

#include <algorithm>
#include <map>

#include "common/net/ipv4.hpp"

namespace vxfed::dataplane {
namespace {

std::string field(const std::string& list, int i) { return list + "[" + std::to_string(i) + "]"; }

}  // namespace

Result<IdentityTrust> IdentityTrust::create(const v1::NetworkPolicy& in, const std::string& where) {
  const auto fail = [&](const std::string& what) -> Result<IdentityTrust> { return make_error(where + ": " + what); };
  IdentityTrust t;
  if (in.clusters_size() > 0xffff) return fail("clusters: " + std::to_string(in.clusters_size()) + " clusters, at most 65535");
  struct Given {
    std::uint32_t first, last, cluster;
    std::string field;  // for the overlap error
  };
  std::vector<Given> given;
  std::map<std::uint32_t, int> cluster_of_identity;  // identity -> clusters[i]
  std::map<std::string, int> seen_names;
  for (int i = 0; i < in.clusters_size(); ++i) {
    const auto& c = in.clusters(i);
    const std::string at = field("clusters", i);
    if (c.name().empty()) return fail(at + ".name: empty");
    if (auto [it, fresh] = seen_names.emplace(c.name(), i); !fresh)
      return fail(at + ".name: \"" + c.name() + "\" is already clusters[" + std::to_string(it->second) + "]");
    if (c.cidrs_size() == 0) return fail(at + ".cidrs: empty (a cluster's identities need its addresses)");
    for (int k = 0; k < c.cidrs_size(); ++k) {
      const std::string f = at + field(".cidrs", k);
      auto p = net::Ipv4Prefix::parse(c.cidrs(k));
      if (!p) return fail(f + ": " + p.error());
      given.push_back({p->addr, p->last().value, static_cast<std::uint32_t>(i), f + " (" + c.cidrs(k) + ")"});
    }
    for (int k = 0; k < c.identities_size(); ++k) {
      const std::uint32_t id = c.identities(k);
      const std::string f = at + field(".identities", k);
      if (id > 0xffff) return fail(f + ": " + std::to_string(id) + " is not 0..65535");
      if (k > 0 && id <= c.identities(k - 1))
        return fail(f + ": " + std::to_string(id) + " not above identities[" + std::to_string(k - 1) +
                    "] (sorted, unique)");
      if (auto [it, fresh] = cluster_of_identity.emplace(id, i); !fresh)
        return fail(f + ": identity " + std::to_string(id) + " is already in clusters[" + std::to_string(it->second) +
                    "] (\"" + in.clusters(it->second).name() + "\") (an identity belongs to one cluster)");
    }
    t.names_.push_back(c.name());
  }
  // The spans by address: another cluster's overlapping span is an error (an address belongs to
  // one cluster); one cluster's own overlapping or touching spans are merged.
  std::sort(given.begin(), given.end(), [](const Given& a, const Given& b) { return a.first < b.first; });
  const Given* reaches = nullptr;  // the given span that reaches furthest in spans_.back()
  for (const auto& g : given) {
    Span* back = t.spans_.empty() ? nullptr : &t.spans_.back();
    if (back && g.first <= back->last) {
      if (g.cluster != back->cluster)
        return fail(g.field + ": overlaps " + reaches->field + " of another cluster (an address belongs to one cluster)");
      if (g.last > back->last) back->last = g.last, reaches = &g;
    } else if (back && back->last + 1 == g.first && g.cluster == back->cluster) {  // touching: one span
      back->last = g.last;
      reaches = &g;
    } else {
      t.spans_.push_back({g.first, g.last, g.cluster});
      reaches = &g;
    }
  }
  for (const auto& [id, cluster] : cluster_of_identity) t.claims_.push_back(id << 16 | static_cast<std::uint32_t>(cluster));
  return t;
}

std::uint32_t IdentityTrust::cluster_index(std::uint16_t identity) const {
  const std::uint32_t key = static_cast<std::uint32_t>(identity) << 16;
  const auto it = std::lower_bound(claims_.begin(), claims_.end(), key);
  if (it == claims_.end() || (*it >> 16) != identity) return kNone;
  return *it & 0xffffu;
}

bool IdentityTrust::admits(std::uint16_t identity, std::uint32_t source) const {
  const std::uint32_t cluster = cluster_index(identity);
  if (cluster == kNone) return true;
  // The last span starting at or below the source.
  const auto it = std::upper_bound(spans_.begin(), spans_.end(), source,
                                   [](std::uint32_t s, const Span& span) { return s < span.first; });
  if (it == spans_.begin()) return false;
  const Span& span = *(it - 1);
  return source <= span.last && span.cluster == cluster;
}

const std::string& IdentityTrust::cluster_of(std::uint16_t identity) const {
  static const std::string none;
  const std::uint32_t cluster = cluster_index(identity);
  return cluster == kNone ? none : names_[cluster];
}

std::size_t IdentityTrust::bytes() const {
  std::size_t n = sizeof(*this) + spans_.capacity() * sizeof(Span) + claims_.capacity() * sizeof(std::uint32_t);
  for (const auto& name : names_) n += sizeof(name) + name.capacity();
  return n;
}

}  // namespace vxfed::dataplane
