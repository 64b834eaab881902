#include "dataplane/runtime/pcap_writer.hpp"

#include <cerrno>
#include <cstring>

namespace vxfed::dataplane {

namespace {

struct FileHeader {
  std::uint32_t magic;          // 0xa1b23c4d: timestamps in nanoseconds
  std::uint16_t version_major;  // 2
  std::uint16_t version_minor;  // 4
  std::int32_t thiszone;        // 0
  std::uint32_t sigfigs;        // 0
  std::uint32_t snaplen;
  std::uint32_t linktype;       // 1: Ethernet
};
static_assert(sizeof(FileHeader) == 24);

struct RecordHeader {
  std::uint32_t seconds;
  std::uint32_t nanoseconds;
  std::uint32_t captured_length;
  std::uint32_t original_length;
};
static_assert(sizeof(RecordHeader) == 16);

}  // namespace

Result<PcapWriter> PcapWriter::open(const std::string& path, std::uint32_t snaplen) {
  const bool to_stdout = path == "-";
  std::FILE* f = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  if (f == nullptr) return make_error("cannot write " + path + ": " + std::strerror(errno));
  PcapWriter w(f, !to_stdout);
  const FileHeader h{0xa1b23c4d, 2, 4, 0, 0, snaplen, 1};
  if (std::fwrite(&h, sizeof(h), 1, f) != 1) return make_error("cannot write " + path + ": " + std::strerror(errno));
  return w;
}

PcapWriter::~PcapWriter() {
  if (file_ != nullptr && owned_) std::fclose(file_);
  else if (file_ != nullptr) std::fflush(file_);
}

Status PcapWriter::write(std::uint64_t unix_ns, std::uint32_t original_length, std::string_view data) {
  const RecordHeader r{static_cast<std::uint32_t>(unix_ns / 1'000'000'000),
                       static_cast<std::uint32_t>(unix_ns % 1'000'000'000),
                       static_cast<std::uint32_t>(data.size()), original_length};
  if (std::fwrite(&r, sizeof(r), 1, file_) != 1 ||
      (!data.empty() && std::fwrite(data.data(), data.size(), 1, file_) != 1))
    return make_error(std::string("pcap write: ") + std::strerror(errno));
  return {};
}

Status PcapWriter::flush() {
  if (std::fflush(file_) != 0) return make_error(std::string("pcap write: ") + std::strerror(errno));
  return {};
}

}  // namespace vxfed::dataplane
