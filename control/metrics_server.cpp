#include "control/metrics_server.hpp"

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
    : io_(io), acceptor_(io), render_(std::move(render)), log_(std::move(log)) {}

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
  tcp::endpoint endpoint(address, port);
  server->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) server->acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) server->acceptor_.bind(endpoint, ec);
  if (!ec) server->acceptor_.listen(64, ec);
  if (ec) return make_error("cannot serve metrics on " + listen + ": " + ec.message());
  server->accept();
  return server;
}

unsigned short MetricsServer::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void MetricsServer::stop() {
  if (!*alive_) return;
  *alive_ = false;
  boost::system::error_code ignored;
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
