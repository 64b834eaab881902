#include "control/api/api_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <deque>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/delimited.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
using stream = asio::local::stream_protocol;

Status prepare_socket_dir(const std::string& socket_path, std::optional<gid_t> group) {
  const auto slash = socket_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return {};
  const std::string dir = socket_path.substr(0, slash);
  std::string partial;
  for (std::size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      partial = dir.substr(0, i);
      struct stat st{};
      if (::stat(partial.c_str(), &st) == 0) continue;
      const bool leaf = i == dir.size();
      const mode_t mode = leaf ? (group ? 0710 : 0700) : 0755;
      if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST)
        return make_error("cannot create " + partial + ": " + std::strerror(errno));
      if (leaf) {
        ::chmod(partial.c_str(), mode);
        if (group && ::chown(partial.c_str(), 0, *group) != 0)
          return make_error("cannot chown " + partial + ": " + std::strerror(errno));
      }
    }
  }
  return {};
}

class ApiServer::Session : public std::enable_shared_from_this<ApiServer::Session> {
 public:
  Session(ApiServer& server, stream::socket socket, PeerCredentials peer)
      : server_(server),
        alive_(server.alive_),
        stats_(server.stats_),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        decoder_(server.options_.max_message_bytes),
        peer_(peer) {
    ++stats_->active;
  }
  ~Session() { --stats_->active; }

  void start() {
    arm_timer();
    read();
  }

  // Answers with one error response and closes (wrong uid, too many connections).
  void refuse(v1::ErrorCode code, const std::string& message) {
    v1::ControlResponse response;
    response.set_code(code);
    response.set_error(message);
    closing_ = true;
    write(response);
  }

 private:
  void arm_timer() {
    timer_.expires_after(std::chrono::milliseconds(server_.options_.idle_timeout_ms));
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || !*self->alive_) return;
      if (self->awaiting_) {  // quiet because vxfedd has not answered yet, not the client
        self->arm_timer();
        return;
      }
      if (self->decoder_.buffered() > 0) {
        ++self->stats_->bad_frames;
        self->server_.log_->warn("API: {} sent a partial frame ({} bytes) and went quiet; closing",
                                 describe(self->peer_), self->decoder_.buffered());
      }
      self->close();
    });
  }

  void read() {
    socket_.async_read_some(asio::buffer(buffer_), [self = shared_from_this()](const boost::system::error_code& ec,
                                                                              std::size_t n) {
      if (!*self->alive_ || self->closing_) return;
      if (ec) {
        if (ec != asio::error::eof && ec != asio::error::operation_aborted)
          self->server_.log_->debug("API: read from {}: {}", describe(self->peer_), ec.message());
        self->close();
        return;
      }
      self->arm_timer();
      self->decoder_.feed(std::string_view(self->buffer_.data(), n));
      if (!self->process()) return;
      self->read();
    });
  }

  // Handles every complete frame; false when the connection is being closed or a request
  // waits for its answer (then the answer resumes processing and reading).
  bool process() {
    for (;;) {
      if (awaiting_) return false;
      auto frame = decoder_.next();
      if (!frame) {
        ++stats_->bad_frames;
        server_.log_->warn("API: refusing input from {}: {}; closing the connection", describe(peer_), frame.error());
        refuse(v1::INVALID_ARGUMENT, frame.error());
        return false;
      }
      if (!frame->has_value()) return true;
      v1::ControlRequest request;
      if (!request.ParseFromString(**frame)) {
        ++stats_->malformed;
        server_.log_->warn("API: malformed request from {} ({} bytes); closing the connection", describe(peer_),
                           (*frame)->size());
        refuse(v1::INVALID_ARGUMENT, "malformed request: not a vxfed.control.v1.ControlRequest");
        return false;
      }
      const bool unknown = request.op_case() == v1::ControlRequest::OP_NOT_SET;
      if (unknown) {
        ++stats_->unknown;
        server_.log_->warn("API: unknown request from {} (request_id {}); closing the connection", describe(peer_),
                           request.request_id());
        closing_ = true;
      }
      awaiting_ = true;
      auto in_handler = std::make_shared<bool>(true);
      server_.handler_(request, peer_, [self = shared_from_this(), in_handler](v1::ControlResponse response) {
        if (!*self->alive_) return;
        self->awaiting_ = false;
        self->write(response);
        if (*in_handler || self->closing_) return;
        // A later answer: the connection goes on with its next request.
        self->arm_timer();
        if (self->process()) self->read();
      });
      *in_handler = false;
      if (closing_) return false;
      if (awaiting_) return false;
    }
  }

  void write(const v1::ControlResponse& response) {
    std::string bytes;
    append_delimited(response, bytes);
    out_.push_back(std::move(bytes));
    flush();
  }

  void flush() {
    if (writing_) return;
    if (out_.empty()) {
      if (closing_) close();
      return;
    }
    writing_ = true;
    asio::async_write(socket_, asio::buffer(out_.front()),
                      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                        self->writing_ = false;
                        if (!*self->alive_) return;
                        if (ec) {
                          self->close();
                          return;
                        }
                        self->out_.pop_front();
                        self->flush();
                      });
  }

  void close() {
    boost::system::error_code ignored;
    timer_.cancel();
    socket_.shutdown(stream::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  ApiServer& server_;
  std::shared_ptr<bool> alive_;
  std::shared_ptr<Stats> stats_;
  stream::socket socket_;
  asio::steady_timer timer_;
  DelimitedDecoder decoder_;
  PeerCredentials peer_;
  std::array<char, 16384> buffer_{};
  std::deque<std::string> out_;
  bool writing_ = false;
  bool closing_ = false;
  bool awaiting_ = false;  // a request's answer is still to come
};

ApiServer::ApiServer(asio::io_context& io, Options options, AsyncHandler handler, std::shared_ptr<spdlog::logger> log)
    : io_(io), options_(std::move(options)), handler_(std::move(handler)), log_(std::move(log)), acceptor_(io) {}

Result<std::unique_ptr<ApiServer>> ApiServer::create(asio::io_context& io, Options options, Handler handler,
                                                     std::shared_ptr<spdlog::logger> log) {
  return create(
      io, std::move(options),
      [handler = std::move(handler)](const v1::ControlRequest& request, const PeerCredentials& peer, Reply reply) {
        reply(handler(request, peer));
      },
      std::move(log));
}

ApiServer::~ApiServer() { stop(); }

Result<std::unique_ptr<ApiServer>> ApiServer::create(asio::io_context& io, Options options, AsyncHandler handler,
                                                     std::shared_ptr<spdlog::logger> log) {
  if (auto ok = prepare_socket_dir(options.path, options.group); !ok) return make_error(ok.error());
  // A socket file left by a crashed vxfedd is removed; a live one means another daemon.
  struct stat st{};
  if (::lstat(options.path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return make_error(options.path + " exists and is not a socket; refusing to replace it");
    stream::socket probe(io);
    boost::system::error_code ec;
    probe.connect(stream::endpoint(options.path), ec);
    if (!ec) return make_error("another process is already serving " + options.path);
    ::unlink(options.path.c_str());
  }
  std::unique_ptr<ApiServer> server(new ApiServer(io, std::move(options), std::move(handler), std::move(log)));
  boost::system::error_code ec;
  const mode_t old_umask = ::umask(0177);  // the socket is born 0600: no window with a wider mode
  server->acceptor_.open(stream(), ec);
  if (!ec) server->acceptor_.bind(stream::endpoint(server->options_.path), ec);
  ::umask(old_umask);
  if (!ec) server->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return make_error("cannot listen on " + server->options_.path + ": " + ec.message());
  if (server->options_.group) {
    if (::chown(server->options_.path.c_str(), 0, *server->options_.group) != 0 ||
        ::chmod(server->options_.path.c_str(), 0660) != 0)
      return make_error("cannot set group/mode of " + server->options_.path + ": " + std::strerror(errno));
  }
  server->accept();
  return server;
}

void ApiServer::stop() {
  if (!*alive_) return;
  *alive_ = false;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  ::unlink(options_.path.c_str());
}

bool ApiServer::allowed(const PeerCredentials& peer) const { return local_peer_allowed(peer, options_.group); }

void ApiServer::accept() {
  acceptor_.async_accept([this, alive = alive_](const boost::system::error_code& ec, stream::socket socket) {
    if (!*alive) return;
    if (ec) {
      if (ec != asio::error::operation_aborted) log_->warn("API: accept: {}", ec.message());
      if (ec == asio::error::no_descriptors) {
        // Out of file descriptors: back off instead of spinning.
        auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
        timer->async_wait([this, timer, alive](const boost::system::error_code&) {
          if (*alive) accept();
        });
        return;
      }
      accept();
      return;
    }
    ++stats_->connections;
    // Unknown credentials (uid -1) are refused below like a wrong uid.
    auto cred = unix_peer_credentials(socket.native_handle());
    const PeerCredentials peer = cred ? *cred : PeerCredentials{};
    auto session = std::make_shared<Session>(*this, std::move(socket), peer);
    if (!allowed(peer)) {
      ++stats_->denied;
      log_->warn("API: refused {}: only root{} may use vxfedd's API", describe(peer),
                 options_.group ? " and group " + std::to_string(*options_.group) : "");
      session->refuse(v1::PERMISSION_DENIED, "permission denied: uid " + std::to_string(peer.uid) +
                                                 " may not use vxfedd's API (root or the configured socket group only)");
    } else if (stats_->active > options_.max_connections) {
      ++stats_->refused_busy;
      log_->warn("API: refused {}: {} connections open (max {})", describe(peer), stats_->active - 1,
                 options_.max_connections);
      session->refuse(v1::UNAVAILABLE, "too many connections to vxfedd; retry");
    } else {
      session->start();
    }
    accept();
  });
}

}  // namespace vxfed::control
