#include "vni/record_codec.hpp"

#include <algorithm>
#include <cstring>

#include "vni/crc32c.hpp"

namespace vxfed::vni {

namespace {

constexpr std::uint32_t kRecordMagic = 0x4345524a;  // "JREC" little-endian

template <typename T>
void put_int(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename T>
T get_int(std::string_view bytes, std::size_t offset) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return value;
}

void put_blob(std::string& out, std::string_view blob) {
  put_int<std::uint32_t>(out, static_cast<std::uint32_t>(blob.size()));
  out.append(blob);
}

}  // namespace

std::string encode_snapshot(std::uint64_t seq, const Entries& entries) {
  std::string body;
  for (const auto& [key, value] : entries) {
    put_blob(body, key);
    put_blob(body, value);
  }
  std::string out(kSnapshotMagic);
  put_int<std::uint64_t>(out, seq);
  put_int<std::uint64_t>(out, body.size());
  put_int<std::uint32_t>(out, crc32c(body));
  out += body;
  return out;
}

Result<DecodedSnapshot> decode_snapshot(std::string_view bytes) {
  constexpr std::size_t kHeader = 8 + 8 + 8 + 4;
  if (bytes.size() < kHeader)
    return make_error("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than its header");
  if (bytes.substr(0, 8) != kSnapshotMagic) return make_error("not a vxfed snapshot (bad magic)");
  DecodedSnapshot out;
  out.seq = get_int<std::uint64_t>(bytes, 8);
  const auto body_len = get_int<std::uint64_t>(bytes, 16);
  const auto crc = get_int<std::uint32_t>(bytes, 24);
  if (bytes.size() - kHeader < body_len)
    return make_error("truncated: body of " + std::to_string(body_len) + " bytes, only " +
                      std::to_string(bytes.size() - kHeader) + " present");
  if (bytes.size() - kHeader > body_len)
    return make_error(std::to_string(bytes.size() - kHeader - body_len) +
                      " unexpected bytes after the body");
  const auto body = bytes.substr(kHeader);
  if (crc32c(body) != crc) return make_error("checksum mismatch (the file is corrupt)");
  std::size_t pos = 0;
  auto blob = [&](std::string& into) -> bool {
    if (body.size() - pos < 4) return false;
    const auto len = get_int<std::uint32_t>(body, pos);
    pos += 4;
    if (body.size() - pos < len) return false;
    into.assign(body.substr(pos, len));
    pos += len;
    return true;
  };
  while (pos < body.size()) {
    std::string key, value;
    if (!blob(key) || !blob(value)) return make_error("malformed entry at body offset " + std::to_string(pos));
    out.entries[std::move(key)] = std::move(value);
  }
  return out;
}

std::string encode_record(const JournalRecord& record) {
  std::string body;
  put_int<std::uint64_t>(body, record.seq);
  body.push_back(static_cast<char>(record.op));
  put_blob(body, record.key);
  body += record.value;
  std::string out;
  put_int<std::uint32_t>(out, kRecordMagic);
  put_int<std::uint32_t>(out, static_cast<std::uint32_t>(body.size()));
  put_int<std::uint32_t>(out, crc32c(body));
  return out + body;
}

std::string encode_journal_header(std::uint64_t base_seq) {
  std::string out(kJournalMagic);
  put_int<std::uint64_t>(out, base_seq);
  return out;
}

Result<DecodedJournal> decode_journal(std::string_view bytes) {
  DecodedJournal out;
  const auto magic_len = std::min(bytes.size(), kJournalMagic.size());
  if (bytes.substr(0, magic_len) != kJournalMagic.substr(0, magic_len) &&
      !std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; }))
    return make_error("not a vxfed journal (bad magic)");
  if (bytes.size() < kJournalHeaderBytes || bytes.substr(0, 8) != kJournalMagic) {
    // Interrupted while writing the header of a fresh journal: nothing was ever acknowledged.
    out.header_torn = true;
    out.torn_bytes = bytes.size();
    return out;
  }
  out.base_seq = get_int<std::uint64_t>(bytes, 8);
  std::size_t pos = kJournalHeaderBytes;
  out.valid_bytes = pos;
  std::uint64_t last_seq = 0;  // journal records after a reset keep increasing past base_seq
  auto zero_tail = [&](std::size_t from) {
    return std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(),
                       [](char c) { return c == 0; });
  };
  while (pos < bytes.size()) {
    const std::size_t left = bytes.size() - pos;
    if (zero_tail(pos)) {
      out.torn_bytes = left;
      break;
    }
    if (left < kRecordHeaderBytes) {
      out.torn_bytes = left;
      break;
    }
    if (get_int<std::uint32_t>(bytes, pos) != kRecordMagic)
      return make_error("corrupt record at offset " + std::to_string(pos) + " (bad magic)");
    const auto len = get_int<std::uint32_t>(bytes, pos + 4);
    const auto crc = get_int<std::uint32_t>(bytes, pos + 8);
    if (left - kRecordHeaderBytes < len) {
      out.torn_bytes = left;
      break;
    }
    const auto body = bytes.substr(pos + kRecordHeaderBytes, len);
    if (crc32c(body) != crc) {
      // The last record's body may be half on disk (length written, data not): torn if nothing
      // follows it; in the middle of the file it is corruption.
      if (pos + kRecordHeaderBytes + len == bytes.size() &&
          std::all_of(body.begin(), body.end(), [](char c) { return c == 0; })) {
        out.torn_bytes = left;
        break;
      }
      return make_error("corrupt record at offset " + std::to_string(pos) + " (checksum mismatch)");
    }
    if (len < 8 + 1 + 4) return make_error("corrupt record at offset " + std::to_string(pos) + " (too short)");
    JournalRecord record;
    record.seq = get_int<std::uint64_t>(body, 0);
    const auto op = static_cast<std::uint8_t>(body[8]);
    if (op != 1 && op != 2) return make_error("corrupt record at offset " + std::to_string(pos) + " (unknown op)");
    record.op = static_cast<Op>(op);
    const auto key_len = get_int<std::uint32_t>(body, 9);
    if (len - 13 < key_len) return make_error("corrupt record at offset " + std::to_string(pos) + " (key overruns)");
    record.key.assign(body.substr(13, key_len));
    record.value.assign(body.substr(13 + key_len));
    if (record.seq <= last_seq)
      return make_error("corrupt record at offset " + std::to_string(pos) + " (sequence " +
                        std::to_string(record.seq) + " after " + std::to_string(last_seq) + ")");
    last_seq = record.seq;
    out.records.push_back(std::move(record));
    pos += kRecordHeaderBytes + len;
    out.valid_bytes = pos;
  }
  return out;
}

}  // namespace vxfed::vni
