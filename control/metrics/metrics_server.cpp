#include "control/metrics/metrics_server.hpp"

#include "common/peer_credentials.hpp"
#include "common/read_file.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

struct HttpConnection : std::enable_shared_from_this<HttpConnection> {
  HttpConnection(tcp::socket s, MetricsServer::Render r, std::shared_ptr<MetricsServerStats> st)
      : socket(std::move(s)), timer(socket.get_executor()), render(std::move(r)), stats(std::move(st)) {}

  void start() {
    timer.expires_after(std::chrono::seconds(5));
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->answered) return;
      ++self->stats->rejected_timeout;
      self->close();
    });
    read();
  }

  void read() {
    socket.async_read_some(asio::buffer(chunk), [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
      if (ec) return self->close();
      self->request.append(self->chunk.data(), n);
      if (self->request.size() > 8192) {
        ++self->stats->rejected_too_large;
        return self->close();
      }
      if (self->request.find("\r\n\r\n") == std::string::npos && self->request.find("\n\n") == std::string::npos)
        return self->read();
      self->respond();
    });
  }

  void respond() {
    const auto line_end = request.find_first_of("\r\n");
    const std::string line = request.substr(0, line_end);
    answered = true;
    std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body, extra;
    if (line.rfind("GET /metrics", 0) == 0 && (line.size() == 12 || line[12] == ' ' || line[12] == '?')) {
      ++stats->requests;
      body = render();
    } else if (line.rfind("GET / ", 0) == 0) {
      type = "text/plain; charset=utf-8";
      body = "vxfedd metrics: /metrics\n";
    } else if (line.rfind("GET ", 0) == 0) {
      ++stats->rejected_not_found;
      status = "404 Not Found";
      type = "text/plain; charset=utf-8";
      body = status + "\n";
    } else {
      ++stats->rejected_method;
      status = "405 Method Not Allowed";
      type = "text/plain; charset=utf-8";
      body = status + ": this endpoint is read-only (GET /metrics)\n";
      extra = "Allow: GET\r\n";
    }
    response = "HTTP/1.0 " + status + "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\n" + extra + "Connection: close\r\n\r\n" + body;
    asio::async_write(socket, asio::buffer(response), [self = shared_from_this()](const boost::system::error_code&, std::size_t) {
      self->close();
    });
  }

  void close() {
    boost::system::error_code ignored;
    timer.cancel();
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  tcp::socket socket;
  asio::steady_timer timer;
  MetricsServer::Render render;
  std::shared_ptr<MetricsServerStats> stats;
  bool answered = false;
  std::array<char, 2048> chunk{};
  std::string request;
  std::string response;
};

}  // namespace

MetricsServer::MetricsServer(asio::io_context& io, Render render, std::shared_ptr<spdlog::logger> log)
    : retry_(io), io_(io), acceptor_(io), render_(std::move(render)), log_(std::move(log)) {}

MetricsServer::~MetricsServer() { stop(); }

Result<std::unique_ptr<MetricsServer>> MetricsServer::create(asio::io_context& io, const std::string& listen, Render render,
                                                             std::shared_ptr<spdlog::logger> log) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) return make_error("metrics address '" + listen + "' must be IPV4:PORT");
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(listen.substr(0, colon), ec);
  if (ec) return make_error("metrics address '" + listen + "': " + ec.message());
  const std::string port_text = listen.substr(colon + 1);
  unsigned long port_number = 0;
  try {
    std::size_t used = 0;
    port_number = std::stoul(port_text, &used);
    if (used != port_text.size()) port_number = 0;
  } catch (...) {
  }
  if (port_number == 0 || port_number > 65535 || !address.is_v4())
    return make_error("metrics address '" + listen + "' must be IPV4:PORT with a port 1..65535");
  const auto port = static_cast<unsigned short>(port_number);
  std::unique_ptr<MetricsServer> server(new MetricsServer(io, std::move(render), std::move(log)));
  server->endpoint_ = tcp::endpoint(address, port);
  server->try_listen();
  return server;
}

namespace {

// Who holds a listening TCP socket on ip:port (or on the wildcard address with that port), for
// the log: "uid 65534", or "" when /proc/net/tcp does not say.
std::string port_holder(std::uint32_t ip, std::uint16_t port) {
  const FileRead text = read_file("/proc/net/tcp");
  if (!text) return "";
  for (std::uint32_t candidate : {ip, 0u})
    if (auto uid = tcp_socket_uid(*text, candidate, port, 0, 0)) return "uid " + std::to_string(*uid);
  return "";
}

}  // namespace

void MetricsServer::try_listen() {
  boost::system::error_code ec;
  acceptor_.close(ec);
  ec.clear();
  acceptor_.open(endpoint_.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint_, ec);
  if (!ec) acceptor_.listen(64, ec);
  const std::string where = endpoint_.address().to_string() + ":" + std::to_string(endpoint_.port());
  if (!ec) {
    listening_ = true;
    if (stats_->listen_failures > 0)
      log_->info("metrics: serving on {} again ({} failed attempts over {:.0f} s)", where, stats_->listen_failures,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - failing_since_).count());
    accept();
    return;
  }
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  if (stats_->listen_failures++ == 0) {
    failing_since_ = std::chrono::steady_clock::now();
    const std::string holder = port_holder(endpoint_.address().to_v4().to_uint(), endpoint_.port());
    log_->error("metrics: cannot serve on {}: {}{}; vxfedd serves the node without metrics and tries again every {} s. "
                "Whoever holds the port answers Prometheus in vxfedd's name: find and stop it (docs/security.md)",
                where, ec.message(), holder.empty() ? "" : " (held by " + holder + ")", kRetry.count());
  }
  retry_.expires_after(kRetry);
  retry_.async_wait([this, alive = alive_](const boost::system::error_code& wait_ec) {
    if (wait_ec || !*alive) return;
    try_listen();
  });
}

unsigned short MetricsServer::port() const {
  if (!listening_) return 0;
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void MetricsServer::stop() {
  if (!*alive_) return;
  *alive_ = false;
  boost::system::error_code ignored;
  retry_.cancel();
  acceptor_.close(ignored);
}

void MetricsServer::accept() {
  acceptor_.async_accept([this, alive = alive_](const boost::system::error_code& ec, tcp::socket socket) {
    if (!*alive) return;
    if (!ec) std::make_shared<HttpConnection>(std::move(socket), render_, stats_)->start();
    accept();
  });
}

}  // namespace vxfed::control
