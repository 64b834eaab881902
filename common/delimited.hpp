// Length-delimited protobuf framing (a varint length, then the message), the framing every
// vxfed unix-socket API uses. Encoding uses protobuf's own delimited utilities; the decoder
// is incremental so that event-driven servers (Boost.Asio) can feed it whatever bytes arrived.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <google/protobuf/message_lite.h>

#include "common/result.hpp"

namespace vxfed {

// Default ceiling for one message on control sockets. Larger frames are refused before any
// allocation, so a hostile 1 GiB length prefix costs nothing.
inline constexpr std::size_t kDefaultMaxMessageBytes = 4u << 20;

// Appends the delimited encoding of `message` to `out`.
void append_delimited(const google::protobuf::MessageLite& message, std::string& out);

// Collects bytes from a stream and yields whole frames.
class DelimitedDecoder {
 public:
  explicit DelimitedDecoder(std::size_t max_message_bytes = kDefaultMaxMessageBytes)
      : max_message_bytes_(max_message_bytes) {}

  void feed(std::string_view bytes) { buffer_.append(bytes); }

  // The next complete frame's payload; nullopt when more bytes are needed. An error (varint
  // longer than 10 bytes, length over the ceiling) is sticky: the stream cannot be resynced,
  // so the caller closes the connection.
  Result<std::optional<std::string>> next();

  std::size_t buffered() const { return buffer_.size(); }

 private:
  std::string buffer_;
  std::size_t max_message_bytes_;
  std::string failed_;
};

// Blocking helpers for clients (CNI plugin, vxfedctl, tests): whole-message send and receive
// over a connected stream socket, with a timeout in milliseconds for each call (0: none).
Status write_delimited(int fd, const google::protobuf::MessageLite& message, int timeout_ms);
Status read_delimited(int fd, google::protobuf::MessageLite& message, int timeout_ms,
                      std::size_t max_message_bytes = kDefaultMaxMessageBytes);

// Connects a SOCK_STREAM unix socket to `path`.
Result<int> connect_unix(const std::string& path, int timeout_ms);

}  // namespace vxfed
