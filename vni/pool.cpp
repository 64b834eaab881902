#include "vni/pool.hpp"

#include <algorithm>
#include <charconv>
#include <set>

namespace vxfed::vni {

namespace {

Result<std::uint32_t> parse_u32(const std::string& text) {
  std::uint32_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty())
    return make_error("'" + text + "' is not a number");
  return value;
}

std::string labels_str(const Labels& labels) {
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ", ";
    out += k + "=" + v;
  }
  return out + "}";
}

}  // namespace

std::string Range::str() const {
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

Result<Range> parse_range(const std::string& text) {
  const auto dash = text.find('-');
  Range range;
  auto first = parse_u32(dash == std::string::npos ? text : text.substr(0, dash));
  if (!first) return make_error("range '" + text + "': " + first.error());
  range.first = range.last = *first;
  if (dash != std::string::npos) {
    auto last = parse_u32(text.substr(dash + 1));
    if (!last) return make_error("range '" + text + "': " + last.error());
    range.last = *last;
  }
  return range;
}

const char* state_name(State state) {
  switch (state) {
    case State::allocated: return "allocated";
    case State::pinned: return "pinned";
    case State::held: return "held";
  }
  return "?";
}

std::optional<State> parse_state(const std::string& name) {
  if (name == "allocated") return State::allocated;
  if (name == "pinned") return State::pinned;
  if (name == "held") return State::held;
  return std::nullopt;
}

Status validate_pools(const std::vector<PoolSpec>& pools) {
  std::set<std::string> names;
  std::vector<std::pair<Range, std::string>> all;
  for (const auto& pool : pools) {
    if (pool.name.empty()) return make_error("a VNI pool has an empty name");
    if (!names.insert(pool.name).second)
      return make_error("VNI pool '" + pool.name + "' is declared twice");
    if (pool.ranges.empty()) return make_error("VNI pool '" + pool.name + "' has no ranges");
    for (const auto& range : pool.ranges) {
      if (range.first > range.last)
        return make_error("VNI pool '" + pool.name + "': range " + std::to_string(range.first) +
                          "-" + std::to_string(range.last) + " ends before it starts");
      if (range.first < kMinVni || range.last > kMaxVni)
        return make_error("VNI pool '" + pool.name + "': range " + range.str() +
                          " is outside 1-16777214 (0 and 16777215 are reserved)");
      all.emplace_back(range, pool.name);
    }
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.first.first < b.first.first; });
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (all[i].first.first <= all[i - 1].first.last)
      return make_error("VNI ranges overlap: " + all[i - 1].first.str() + " (pool '" +
                        all[i - 1].second + "') and " + all[i].first.str() + " (pool '" +
                        all[i].second + "')");
  }
  return {};
}

Result<Allocator> Allocator::create(std::vector<PoolSpec> pools, std::uint64_t hold_down_ms) {
  if (auto ok = validate_pools(pools); !ok) return make_error(ok.error());
  return Allocator(std::move(pools), hold_down_ms);
}

Status Allocator::reconfigure(std::vector<PoolSpec> pools, std::uint64_t hold_down_ms) {
  if (auto ok = validate_pools(pools); !ok) return ok;
  pools_ = std::move(pools);
  hold_down_ms_ = hold_down_ms;
  return {};
}

Status Allocator::restore(const std::vector<Allocation>& records) {
  std::map<std::uint32_t, Allocation> by_vni;
  std::map<std::string, std::uint32_t> live;
  for (const auto& r : records) {
    if (r.vni < kMinVni || r.vni > kMaxVni)
      return make_error("stored VNI " + std::to_string(r.vni) + " is outside 1-16777214");
    if (!by_vni.emplace(r.vni, r).second)
      return make_error("stored VNI " + std::to_string(r.vni) + " appears twice");
    if (r.state != State::held && !live.emplace(r.network, r.vni).second)
      return make_error("stored network '" + r.network + "' holds two VNIs (" +
                        std::to_string(live[r.network]) + " and " + std::to_string(r.vni) + ")");
  }
  by_vni_ = std::move(by_vni);
  live_by_network_ = std::move(live);
  return {};
}

Result<const PoolSpec*> Allocator::select_pool(const Labels& labels) const {
  const PoolSpec* best = nullptr;
  for (const auto& pool : pools_) {
    const bool match = std::all_of(pool.selector.begin(), pool.selector.end(), [&](const auto& kv) {
      auto it = labels.find(kv.first);
      return it != labels.end() && it->second == kv.second;
    });
    if (match && (best == nullptr || pool.selector.size() > best->selector.size())) best = &pool;
  }
  if (best == nullptr) return make_error("no VNI pool selects the labels " + labels_str(labels));
  return best;
}

const Allocation* Allocator::find_network(const std::string& network) const {
  auto it = live_by_network_.find(network);
  return it == live_by_network_.end() ? nullptr : &by_vni_.at(it->second);
}

const Allocation* Allocator::find_vni(std::uint32_t vni) const {
  auto it = by_vni_.find(vni);
  return it == by_vni_.end() ? nullptr : &it->second;
}

const Allocation* Allocator::find_held(const std::string& network) const {
  for (const auto& [vni, record] : by_vni_)
    if (record.state == State::held && record.network == network) return &record;
  return nullptr;
}

std::vector<Allocation> Allocator::list() const {
  std::vector<Allocation> out;
  out.reserve(by_vni_.size());
  for (const auto& [vni, record] : by_vni_) out.push_back(record);
  return out;
}

void Allocator::put_record(const Allocation& record) {
  erase_record(record.vni);
  if (record.state != State::held) {
    if (auto it = live_by_network_.find(record.network); it != live_by_network_.end())
      by_vni_.erase(it->second);
    live_by_network_[record.network] = record.vni;
  }
  by_vni_[record.vni] = record;
}

void Allocator::erase_record(std::uint32_t vni) {
  auto it = by_vni_.find(vni);
  if (it == by_vni_.end()) return;
  if (it->second.state != State::held) live_by_network_.erase(it->second.network);
  by_vni_.erase(it);
}

Result<Allocation> Allocator::allocate(const std::string& network, const Labels& labels,
                                       std::uint32_t pinned, std::uint64_t now_ms) {
  if (network.empty()) return make_error("a network needs a name to get a VNI");
  if (const Allocation* live = find_network(network)) {
    if (pinned != 0 && live->vni != pinned)
      return make_error("network '" + network + "' already has VNI " + std::to_string(live->vni) +
                        "; it cannot be pinned to " + std::to_string(pinned) +
                        " (remove the network first)");
    return *live;
  }
  if (pinned != 0) {
    if (pinned < kMinVni || pinned > kMaxVni)
      return make_error("pinned VNI " + std::to_string(pinned) +
                        " is outside 1-16777214 (0 and 16777215 are reserved)");
    if (const Allocation* other = find_vni(pinned)) {
      const bool reclaim = other->state == State::held && other->network == network;
      const bool expired = other->state == State::held && other->held_until_ms <= now_ms;
      if (!reclaim && !expired) {
        if (other->state == State::held)
          return make_error("VNI " + std::to_string(pinned) + " is held down after network '" +
                            other->network + "' released it; free again in " +
                            std::to_string((other->held_until_ms - now_ms + 999) / 1000) + " s");
        return make_error("VNI " + std::to_string(pinned) + " is already used by network '" +
                          other->network + "'");
      }
    }
    Allocation record{pinned, "", network, State::pinned, 0};
    put_record(record);
    return record;
  }
  // A network that released its VNI recently gets it back: same name, same VNI.
  if (const Allocation* held = find_held(network)) {
    Allocation record = *held;
    record.state = record.pool.empty() ? State::pinned : State::allocated;
    record.held_until_ms = 0;
    put_record(record);
    return record;
  }
  auto pool = select_pool(labels);
  if (!pool) return make_error(pool.error());
  return allocate_from(**pool, network, now_ms);
}

Result<Allocation> Allocator::allocate_from(const PoolSpec& pool, const std::string& network,
                                            std::uint64_t now_ms) {
  std::uint64_t total = 0;
  for (const auto& r : pool.ranges) total += r.size();
  // Next-fit from the pool's cursor: fast for large pools, and it delays reuse of a VNI
  // even after its hold-down ended.
  auto& cursor = cursor_[pool.name];
  std::uint64_t start = cursor % total;
  std::uint64_t held = 0;
  std::uint64_t soonest = UINT64_MAX;
  for (std::uint64_t step = 0; step < total; ++step) {
    std::uint64_t index = (start + step) % total;
    std::uint32_t vni = 0;
    for (const auto& r : pool.ranges) {
      if (index < r.size()) { vni = r.first + static_cast<std::uint32_t>(index); break; }
      index -= r.size();
    }
    auto it = by_vni_.find(vni);
    if (it != by_vni_.end()) {
      if (it->second.state != State::held) continue;
      if (it->second.held_until_ms > now_ms) {
        ++held;
        soonest = std::min(soonest, it->second.held_until_ms);
        continue;
      }
    }
    Allocation record{vni, pool.name, network, State::allocated, 0};
    put_record(record);
    cursor = (start + step + 1) % total;
    return record;
  }
  ++exhausted_[pool.name];
  std::string message = "VNI pool '" + pool.name + "' is exhausted: all " + std::to_string(total) +
                        " VNIs are in use";
  if (held > 0)
    message += " (" + std::to_string(held) + " held down after release; the first is free in " +
               std::to_string((soonest - now_ms + 999) / 1000) + " s)";
  return make_error(message + "; widen its ranges or remove networks");
}

Result<Allocation> Allocator::release(const std::string& network, std::uint64_t now_ms) {
  const Allocation* live = find_network(network);
  if (live == nullptr) return make_error("network '" + network + "' has no VNI");
  Allocation record = *live;
  record.state = State::held;
  record.held_until_ms = now_ms + hold_down_ms_;
  put_record(record);
  return record;
}

std::vector<std::uint32_t> Allocator::expire(std::uint64_t now_ms) {
  std::vector<std::uint32_t> gone;
  for (const auto& [vni, record] : by_vni_)
    if (record.state == State::held && record.held_until_ms <= now_ms) gone.push_back(vni);
  for (auto vni : gone) by_vni_.erase(vni);
  return gone;
}

}  // namespace vxfed::vni
