// vxfed-fed-driver: one federation-store client per process, for the integration tests (many
// of them at once play many nodes) and for trying the store by hand:
//   join     --node N --network X --subnet S [--block-len L] [--vni V] [--label k=v]...
//            prints {"vni", "pool", "block"} as JSON
//   leave    --node N --network X
//   register --node N [--hold-seconds S]   registers and keeps the lease alive for S seconds
//   watch    --prefix P --count N          prints N events under P (relative key, from now)
//            as JSON lines, after a first line {"watching": true}
//   probe    --node N --seconds S [--interval-ms I]   one client making a write and a read of
//            probe/<node> every I ms for S seconds, each under a CallDeadline of
//            min(timeout, 3 s) as vxfedd's API requests are; prints {"first_member": M}, then a
//            line per call {"op", "start_ms" (unix), "ms" (duration), "ok", "error"}
// Common: --endpoints a:p,b:p,c:p [--key-prefix /vxfed] [--timeout-ms T] [--start-at MS]
//         [--ca-file F [--cert-file F --key-file F]] (TLS, with a client certificate)
// (--start-at: wait until that unix time in ms, so that processes act at one moment).
// Errors: "CODE: sentence" on stderr; exit 3 for UNAVAILABLE, 1 for any other error.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "federation/etcd_client.hpp"
#include "federation/federation_store.hpp"

using namespace vxfed::federation;

namespace {

std::uint64_t now_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

int fail(const StoreError& e) {
  std::cerr << code_name(e.code) << ": " << e.message << "\n";
  return e.code == Code::unavailable ? 3 : 1;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxfed-fed-driver: a federation-store client for tests"};
  std::string endpoints, key_prefix = "/vxfed", ca_file, cert_file, key_file, node, network, subnet, prefix, cluster = "cluster-a";
  std::uint32_t timeout_ms = 2000, block_len = 24, pinned = 0, count = 1, hold_seconds = 0;
  std::uint64_t start_at = 0;
  std::uint32_t seconds = 10, interval_ms = 100;
  std::vector<std::string> labels;
  app.add_option("--endpoints", endpoints, "etcd members, comma-separated")->required();
  app.add_option("--key-prefix", key_prefix);
  app.add_option("--ca-file", ca_file);
  app.add_option("--cert-file", cert_file);
  app.add_option("--key-file", key_file);
  app.add_option("--timeout-ms", timeout_ms);
  app.add_option("--start-at", start_at, "unix ms to wait for before acting");
  auto* join = app.add_subcommand("join", "VNI and this node's block of a network");
  join->add_option("--node", node)->required();
  join->add_option("--cluster", cluster);
  join->add_option("--network", network)->required();
  join->add_option("--subnet", subnet)->required();
  join->add_option("--block-len", block_len);
  join->add_option("--vni", pinned);
  join->add_option("--label", labels);
  auto* leave = app.add_subcommand("leave", "stop using a network");
  leave->add_option("--node", node)->required();
  leave->add_option("--network", network)->required();
  auto* reg = app.add_subcommand("register", "register the node and keep it alive");
  reg->add_option("--node", node)->required();
  reg->add_option("--hold-seconds", hold_seconds);
  auto* watch = app.add_subcommand("watch", "print events under a prefix");
  watch->add_option("--prefix", prefix)->required();
  watch->add_option("--count", count);
  auto* probe = app.add_subcommand("probe", "time a write and a read every interval");
  probe->add_option("--node", node)->required();
  probe->add_option("--seconds", seconds);
  probe->add_option("--interval-ms", interval_ms);
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);

  EtcdOptions options;
  options.endpoints = split(endpoints);
  options.key_prefix = key_prefix;
  options.ca_file = ca_file;
  options.cert_file = cert_file;
  options.key_file = key_file;
  options.request_timeout_ms = timeout_ms;
  options.client_name = node;  // each node starts from its own member, as vxfedd's client does
  auto client = EtcdClient::create(options);
  if (!client) return fail(client.store_error());

  FederationOptions fo;
  fo.node = node;
  fo.cluster = cluster;
  fo.vtep = "198.18.0.1";
  fo.pools.pools = {vxfed::vni::PoolSpec{"federation", {vxfed::vni::Range{1000, 1999}}, {}}};
  FederationStore store(**client, fo);
  if (start_at > now_ms()) std::this_thread::sleep_for(std::chrono::milliseconds(start_at - now_ms()));

  if (*join) {
    NetworkRequest request{network, {}, pinned, subnet, block_len};
    for (const auto& l : labels) {
      const auto eq = l.find('=');
      request.labels[l.substr(0, eq)] = eq == std::string::npos ? "" : l.substr(eq + 1);
    }
    auto m = store.join(request, now_ms());
    if (!m) return fail(m.store_error());
    std::cout << nlohmann::json{{"vni", m->vni}, {"pool", m->pool}, {"block", m->block}}.dump() << std::endl;
    return 0;
  }
  if (*leave) {
    auto ok = store.leave(network, now_ms());
    if (!ok) return fail(ok.store_error());
    return 0;
  }
  if (*probe) {
    std::cout << nlohmann::json{{"first_member", (*client)->first_member()}}.dump() << std::endl;
    const std::string key = "probe/" + node;
    std::int64_t revision = 0;  // the key's mod revision as last written or seen (0: absent)
    const auto budget = std::chrono::milliseconds(std::min<std::uint32_t>(timeout_ms, 3000));
    auto timed = [&](const char* op, auto&& call) {
      const auto start_ms = now_ms();
      const auto started = std::chrono::steady_clock::now();
      std::string error;
      {
        CallDeadline deadline(started + budget);
        if (auto r = call(); !r) error = std::string(code_name(r.code())) + ": " + r.error();
      }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      std::cout << nlohmann::json{{"op", op}, {"start_ms", start_ms}, {"ms", ms}, {"ok", error.empty()}, {"error", error}}.dump()
                << std::endl;
    };
    const auto until = now_ms() + std::uint64_t{seconds} * 1000;
    for (std::uint64_t i = 0; now_ms() < until; ++i) {
      const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(interval_ms);
      // The write as the store writes (FederationStore): guarded, here by the key's revision
      // as last seen, so that the client may hedge it (a plain put is not hedged). A repeat
      // of our own write that was applied first finds the guard false and our value there.
      timed("put", [&]() -> StoreStatus {
        const std::string value = std::to_string(i);
        auto r = (*client)->txn({Compare::unchanged(key, revision)}, {Op::put(key, value)}, {Op::get(key)});
        if (!r) return r.store_error();
        if (r->succeeded) {
          revision = r->revision;
          return Done{};
        }
        const auto& now = r->gets.empty() || r->gets[0].empty() ? KeyValue{} : r->gets[0][0];
        revision = now.mod_revision;
        if (now.value == value) return Done{};
        return store_error(Code::conflict, "probe key " + key + " was changed by someone else (value " + now.value + ")");
      });
      timed("get", [&] { return (*client)->get(key); });
      std::this_thread::sleep_until(next);
    }
    return 0;
  }
  if (*reg) {
    auto ok = store.register_node(now_ms());
    if (!ok) return fail(ok.store_error());
    std::cout << nlohmann::json{{"lease", store.lease()}}.dump() << std::endl;
    const auto until = now_ms() + std::uint64_t{hold_seconds} * 1000;
    while (now_ms() < until) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (auto alive = store.keep_alive(now_ms()); !alive) std::cerr << "keep-alive: " << alive.error() << std::endl;
    }
    return 0;
  }
  // watch
  std::mutex mutex;
  std::condition_variable done;
  std::uint32_t seen = 0;
  auto w = (*client)->watch_prefix(
      prefix, 0,
      [&](const std::vector<WatchEvent>& events, std::int64_t revision) {
        std::lock_guard lock(mutex);
        for (const auto& e : events) {
          std::cout << nlohmann::json{{"type", e.type == WatchEvent::Type::put ? "put" : "delete"},
                                      {"key", e.kv.key},
                                      {"value", e.kv.value},
                                      {"revision", revision}}
                           .dump()
                    << std::endl;
          ++seen;
        }
        done.notify_all();
      },
      [&](bool connected, const std::string& detail) {
        std::lock_guard lock(mutex);
        if (connected) std::cout << nlohmann::json{{"watching", true}, {"member", detail}}.dump() << std::endl;
        else std::cerr << "watch broken: " << detail << std::endl;
      });
  std::unique_lock lock(mutex);
  const bool all = done.wait_for(lock, std::chrono::seconds(60), [&] { return seen >= count; });
  lock.unlock();
  w.reset();
  if (!all) {
    std::cerr << "INTERNAL: saw " << seen << " of " << count << " events in 60 s\n";
    return 1;
  }
  return 0;
}
