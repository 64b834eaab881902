#include "common/delimited.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

namespace vxfed {

namespace {

// Parses a base-128 varint from the front of `bytes`. Returns consumed bytes, 0 when more
// input is needed, -1 when the varint is malformed (over 10 bytes).
int parse_varint(std::string_view bytes, std::uint64_t& value) {
  value = 0;
  for (std::size_t i = 0; i < bytes.size() && i < 10; ++i) {
    const auto byte = static_cast<std::uint8_t>(bytes[i]);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) return static_cast<int>(i + 1);
  }
  return bytes.size() >= 10 ? -1 : 0;
}

Status wait_for(int fd, short events, int timeout_ms) {
  if (timeout_ms <= 0) return {};
  pollfd pfd{fd, events, 0};
  for (;;) {
    const int rc = ::poll(&pfd, 1, timeout_ms);
    if (rc > 0) return {};
    if (rc == 0) return make_error("timed out after " + std::to_string(timeout_ms) + " ms");
    if (errno != EINTR) return make_error(std::string("poll: ") + std::strerror(errno));
  }
}

}  // namespace

void append_delimited(const google::protobuf::MessageLite& message, std::string& out) {
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::util::SerializeDelimitedToZeroCopyStream(message, &stream);
}

Result<std::optional<std::string>> DelimitedDecoder::next() {
  if (!failed_.empty()) return make_error(failed_);
  std::uint64_t length = 0;
  const int header = parse_varint(buffer_, length);
  if (header < 0) {
    failed_ = "malformed length prefix (varint over 10 bytes)";
    return make_error(failed_);
  }
  if (header == 0) return std::optional<std::string>{};
  if (length > max_message_bytes_) {
    failed_ = "message of " + std::to_string(length) + " bytes exceeds the limit of " +
              std::to_string(max_message_bytes_) + " bytes";
    return make_error(failed_);
  }
  if (buffer_.size() < header + length) return std::optional<std::string>{};
  std::string payload = buffer_.substr(header, length);
  buffer_.erase(0, header + length);
  return std::optional<std::string>{std::move(payload)};
}

Status write_delimited(int fd, const google::protobuf::MessageLite& message, int timeout_ms) {
  std::string bytes;
  append_delimited(message, bytes);
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    if (auto ready = wait_for(fd, POLLOUT, timeout_ms); !ready) return ready;
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return make_error(std::string("send: ") + std::strerror(errno));
    }
    sent += static_cast<std::size_t>(n);
  }
  return {};
}

Status read_delimited(int fd, google::protobuf::MessageLite& message, int timeout_ms,
                      std::size_t max_message_bytes) {
  // Reads exactly one frame and not a byte more: a connection may carry several pipelined
  // replies, and bytes of the next one must stay in the socket for the next call. The varint
  // prefix is read a byte at a time (at most 10 reads), the payload in as few reads as the
  // kernel allows.
  auto read_exact = [&](char* out, std::size_t wanted) -> Status {
    std::size_t got = 0;
    while (got < wanted) {
      if (auto ready = wait_for(fd, POLLIN, timeout_ms); !ready) return ready;
      const ssize_t n = ::recv(fd, out + got, wanted - got, 0);
      if (n == 0) return make_error("connection closed by peer");
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return make_error(std::string("recv: ") + std::strerror(errno));
      }
      got += static_cast<std::size_t>(n);
    }
    return {};
  };

  DelimitedDecoder decoder(max_message_bytes);
  std::string prefix;
  for (;;) {
    char byte = 0;
    if (auto status = read_exact(&byte, 1); !status) return status;
    prefix.push_back(byte);
    decoder.feed(std::string_view(&byte, 1));
    auto frame = decoder.next();  // refuses an oversized length before any allocation
    if (!frame) return make_error(frame.error());
    if (frame->has_value()) break;  // zero-length message: the prefix was the whole frame
    if ((static_cast<unsigned char>(byte) & 0x80) == 0) {
      std::uint64_t length = 0;
      parse_varint(prefix, length);
      std::string payload(length, '\0');
      if (auto status = read_exact(payload.data(), payload.size()); !status) return status;
      if (!message.ParseFromString(payload)) return make_error("malformed protobuf message");
      return {};
    }
  }
  if (!message.ParseFromString(std::string())) return make_error("malformed protobuf message");
  return {};
}

Result<int> connect_unix(const std::string& path, int timeout_ms) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return make_error("socket path too long: " + path);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    const int err = errno;
    // ENOENT/ECONNREFUSED while a daemon starts: retry until the deadline.
    if ((err == ENOENT || err == ECONNREFUSED || err == EINTR) && timeout_ms > 0 &&
        std::chrono::steady_clock::now() < deadline) {
      ::usleep(20000);
      continue;
    }
    ::close(fd);
    return make_error("cannot connect to " + path + ": " + std::strerror(err));
  }
}

}  // namespace vxfed
