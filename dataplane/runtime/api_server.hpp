// The unix-socket server of the table API (proto/dataplane.proto), run on the control thread
// by an epoll loop: several clients at once, each request answered in order by the handler.
// A frame that breaks the framing (bad varint, length over the ceiling) closes that
// connection only; a frame that is not a DataplaneRequest gets an error reply.
// Who may connect: the socket is created 0600, and every connection is checked with
// SO_PEERCRED besides (root or our own uid; common/peer_credentials.hpp), so a socket file
// whose mode someone opened up still admits nobody else. A refused peer gets one error
// reply and is disconnected; refused() counts them.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "proto/dataplane.pb.h"
#include "common/delimited.hpp"
#include "common/result.hpp"

namespace vxfed::dataplane {

namespace pb = vxfed::dataplane::v1;

class ApiServer {
 public:
  using Handler = std::function<void(const pb::DataplaneRequest&, pb::DataplaneResponse&)>;

  // Snapshots of 130k routes run to several MiB; this ceiling still refuses absurd lengths
  // (a 1 GiB prefix) before allocating anything.
  static constexpr std::size_t kMaxRequestBytes = 64u << 20;
  static constexpr std::size_t kMaxClients = 64;

  // Listens on `path` (mode 0600; a stale socket file is replaced).
  static Result<std::unique_ptr<ApiServer>> create(const std::string& path, Handler handler);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Waits up to timeout_ms for socket events and serves them.
  void poll(int timeout_ms);

  std::size_t clients() const { return clients_.size(); }
  std::uint64_t refused() const { return refused_; }

 private:
  struct Client {
    explicit Client(int fd_) : fd(fd_), decoder(kMaxRequestBytes) {}
    int fd;
    DelimitedDecoder decoder;
    std::string out;
    bool closing = false;
  };

  ApiServer(std::string path, Handler handler) : path_(std::move(path)), handler_(std::move(handler)) {}
  void accept_clients();
  void serve(Client& c);
  void read_from(Client& c);
  void write_to(Client& c);
  void close_client(int fd);
  void refuse(int fd, const std::string& why);
  void update_interest(Client& c);

  std::string path_;
  Handler handler_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  std::map<int, std::unique_ptr<Client>> clients_;
  std::uint64_t refused_ = 0;
};

}  // namespace vxfed::dataplane
