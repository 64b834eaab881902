// A stand-in for vxfed-dataplane that acknowledges every request at once, for benchmarks of
// vxfedd alone (its own cost, without the dataplane's table updates, which perf/tables
// measures). Counts what it saw; keeps the set of routes vxfedd has given it, so a benchmark
// can wait for "the last route is in" and see how vxfedd cut the stream into messages.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include "common/delimited.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::perf {

class NullDataplane {
 public:
  explicit NullDataplane(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    ::unlink(path_.c_str());
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 4) != 0) {
      std::perror("null dataplane");
      std::exit(1);
    }
    thread_ = std::thread([this] { serve(); });
  }
  ~NullDataplane() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (conn_ >= 0) ::shutdown(conn_, SHUT_RDWR);
    thread_.join();
    ::unlink(path_.c_str());
  }

  std::atomic<std::uint64_t> snapshots{0}, deltas{0}, delta_changes{0};
  std::atomic<std::uint64_t> largest_delta_entries{0}, largest_request_bytes{0};

  std::size_t routes() {
    std::lock_guard lock(mu_);
    return routes_.size();
  }
  bool has_route(std::uint32_t vni, const std::string& prefix) {
    std::lock_guard lock(mu_);
    return routes_.count(key(vni, prefix)) > 0;
  }

 private:
  static std::string key(std::uint32_t vni, const std::string& prefix) { return std::to_string(vni) + "/" + prefix; }

  void apply(const dataplane::v1::DataplaneRequest& request) {
    std::lock_guard lock(mu_);
    if (request.has_snapshot()) {
      ++snapshots;
      routes_.clear();
      for (const auto& r : request.snapshot().tables().routes()) routes_.insert(key(r.vni(), r.prefix()));
    }
    if (request.has_delta()) {
      const auto& d = request.delta();
      ++deltas;
      const std::uint64_t entries = d.upsert().endpoints_size() + d.remove_endpoints_size() +
                                    d.upsert().networks_size() + d.remove_networks_size() +
                                    d.upsert().routes_size() + d.remove_routes_size();
      delta_changes += entries;
      largest_delta_entries = std::max<std::uint64_t>(largest_delta_entries, entries);
      for (const auto& r : d.upsert().routes()) routes_.insert(key(r.vni(), r.prefix()));
      for (const auto& k : d.remove_routes()) routes_.erase(key(k.vni(), k.prefix()));
    }
  }

  void serve() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      conn_ = c;
      DelimitedDecoder decoder(256u << 20);
      char chunk[65536];
      for (;;) {
        auto frame = decoder.next();
        if (!frame) break;
        if (!frame->has_value()) {
          const ssize_t n = ::recv(c, chunk, sizeof chunk, 0);
          if (n <= 0) break;
          decoder.feed(std::string_view(chunk, static_cast<std::size_t>(n)));
          continue;
        }
        largest_request_bytes = std::max<std::uint64_t>(largest_request_bytes, (**frame).size());
        dataplane::v1::DataplaneRequest request;
        if (!request.ParseFromString(**frame)) break;
        apply(request);
        dataplane::v1::DataplaneResponse response;
        response.set_request_id(request.request_id());
        response.set_ok(true);
        if (request.has_get_status()) response.mutable_status()->set_ready(true);
        if (!write_delimited(c, response, 5000)) break;
      }
      ::close(c);
      conn_ = -1;
    }
  }

  std::string path_;
  int fd_ = -1;
  std::atomic<int> conn_{-1};
  std::thread thread_;
  std::mutex mu_;
  std::unordered_set<std::string> routes_;
};

}  // namespace vxfed::perf
