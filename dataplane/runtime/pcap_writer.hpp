// Writes the classic pcap file format (what tcpdump -r and Wireshark read): the global
// header once, then a record per packet. Nanosecond timestamps (magic 0xa1b23c4d), link
// type Ethernet, little-endian as this machine writes it. The format is public: the libpcap
// file format as documented by tcpdump.org and IETF draft-ietf-opsawg-pcap.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace vxfed::dataplane {

class PcapWriter {
 public:
  // `path` "-" writes to standard output (for `| tcpdump -r -`).
  static Result<PcapWriter> open(const std::string& path, std::uint32_t snaplen);
  PcapWriter(PcapWriter&& other) noexcept : file_(other.file_), owned_(other.owned_) { other.file_ = nullptr; }
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;
  ~PcapWriter();

  Status write(std::uint64_t unix_ns, std::uint32_t original_length, std::string_view data);
  Status flush();

 private:
  PcapWriter(std::FILE* file, bool owned) : file_(file), owned_(owned) {}
  std::FILE* file_;
  bool owned_;
};

}  // namespace vxfed::dataplane
