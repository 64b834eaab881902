// Unit tests for the length-delimited framing shared by every unix-socket API.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/delimited.hpp"
#include "proto/dataplane.pb.h"

namespace {

using vxfed::DelimitedDecoder;
using vxfed::dataplane::v1::DataplaneRequest;

std::string encode(std::uint64_t id) {
  DataplaneRequest request;
  request.set_request_id(id);
  request.mutable_get_status();
  std::string bytes;
  vxfed::append_delimited(request, bytes);
  return bytes;
}

TEST(DelimitedDecoder, YieldsFramesFedOneByteAtATime) {
  const std::string stream = encode(7) + encode(8);
  DelimitedDecoder decoder;
  std::vector<std::uint64_t> ids;
  for (char c : stream) {
    decoder.feed(std::string_view(&c, 1));
    auto frame = decoder.next();
    ASSERT_TRUE(frame.ok()) << frame.error();
    if (frame->has_value()) {
      DataplaneRequest request;
      ASSERT_TRUE(request.ParseFromString(**frame));
      ids.push_back(request.request_id());
    }
  }
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{7, 8}));
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(DelimitedDecoder, RefusesHugeLengthPrefixBeforeBuffering) {
  DelimitedDecoder decoder(1024);
  // varint 1 GiB = 0x40000000.
  const unsigned char prefix[] = {0x80, 0x80, 0x80, 0x80, 0x04};
  decoder.feed(std::string_view(reinterpret_cast<const char*>(prefix), sizeof(prefix)));
  auto frame = decoder.next();
  ASSERT_FALSE(frame.ok());
  EXPECT_NE(frame.error().find("exceeds the limit"), std::string::npos);
  EXPECT_FALSE(decoder.next().ok()) << "errors are sticky";
}

TEST(DelimitedDecoder, RefusesOverlongVarint) {
  DelimitedDecoder decoder;
  decoder.feed(std::string(11, '\xff'));
  EXPECT_FALSE(decoder.next().ok());
}

TEST(DelimitedSocket, RoundTripsOverSocketPair) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  DataplaneRequest sent;
  sent.set_request_id(42);
  sent.mutable_dump_tables();
  ASSERT_TRUE(vxfed::write_delimited(fds[0], sent, 1000).ok());
  DataplaneRequest received;
  auto status = vxfed::read_delimited(fds[1], received, 1000);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(received.request_id(), 42u);
  EXPECT_TRUE(received.has_dump_tables());
  ::close(fds[0]);
  auto eof = vxfed::read_delimited(fds[1], received, 1000);
  EXPECT_FALSE(eof.ok());
  ::close(fds[1]);
}

TEST(DelimitedSocket, ReadTimesOut) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  DataplaneRequest received;
  auto status = vxfed::read_delimited(fds[1], received, 50);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("timed out"), std::string::npos);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace

namespace {

TEST(DelimitedSocket, PipelinedFramesAreReadOneAtATime) {
  // Several replies in one write: each read_delimited call must take exactly one of them.
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::string bytes;
  for (std::uint64_t id = 1; id <= 3; ++id) {
    DataplaneRequest request;
    request.set_request_id(id);
    request.mutable_get_counters();
    vxfed::append_delimited(request, bytes);
  }
  ASSERT_EQ(::send(fds[0], bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  for (std::uint64_t id = 1; id <= 3; ++id) {
    DataplaneRequest received;
    auto status = vxfed::read_delimited(fds[1], received, 1000);
    ASSERT_TRUE(status.ok()) << status.error();
    EXPECT_EQ(received.request_id(), id);
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(DelimitedSocket, ReadRefusesOversizedPrefix) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const unsigned char prefix[] = {0x80, 0x80, 0x80, 0x80, 0x04};  // 1 GiB
  ASSERT_EQ(::send(fds[0], prefix, sizeof(prefix), 0), static_cast<ssize_t>(sizeof(prefix)));
  DataplaneRequest received;
  auto status = vxfed::read_delimited(fds[1], received, 1000, 1024);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("exceeds the limit"), std::string::npos);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
