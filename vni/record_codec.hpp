// Encoding of the durable store's two files, as pure functions over bytes (no I/O), so that
// every way a file can be damaged is testable from a table of byte strings.
//
// Snapshot file:  "VXFSNAP1" | u64 seq | u64 body_len | u32 crc32c(body) | body
//                 body = repeated (u32 key_len | key | u32 value_len | value)
// Journal file:   "VXFJRNL1" | u64 base_seq | records   (base_seq: the snapshot seq it follows)
//                 record = u32 magic "JREC" | u32 body_len | u32 crc32c(body) | body
//                 body = u64 seq | u8 op (1 put, 2 erase) | u32 key_len | key | value
// Integers little-endian. A snapshot holds every entry as of `seq`; journal records with
// seq <= that are already in it (a crash between the snapshot's rename and the journal's
// reset leaves them behind; replaying them is harmless because they are skipped).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace vxfed::vni {

using Entries = std::map<std::string, std::string>;

inline constexpr std::string_view kSnapshotMagic = "VXFSNAP1";
inline constexpr std::string_view kJournalMagic = "VXFJRNL1";
inline constexpr std::size_t kRecordHeaderBytes = 12;

enum class Op : std::uint8_t { put = 1, erase = 2 };

struct JournalRecord {
  std::uint64_t seq = 0;
  Op op = Op::put;
  std::string key;
  std::string value;
};

std::string encode_snapshot(std::uint64_t seq, const Entries& entries);
struct DecodedSnapshot {
  std::uint64_t seq = 0;
  Entries entries;
};
// Any damage (truncation, wrong magic, bad checksum, trailing bytes) is an error: a snapshot is
// only ever published whole by rename, so damage means the disk or someone else broke it.
Result<DecodedSnapshot> decode_snapshot(std::string_view bytes);

std::string encode_record(const JournalRecord& record);

std::string encode_journal_header(std::uint64_t base_seq);
inline constexpr std::size_t kJournalHeaderBytes = 16;

struct DecodedJournal {
  std::uint64_t base_seq = 0;
  bool header_torn = false;      // shorter than its header: an interrupted creation
  std::vector<JournalRecord> records;
  std::size_t valid_bytes = 0;   // file length up to the end of the last good record
  std::size_t torn_bytes = 0;    // bytes after it that are an interrupted append (see below)
};
// A torn tail (an append interrupted by a crash: an incomplete last record, or a tail of zero
// bytes the filesystem left behind) was never acknowledged and is reported, not an error.
// Anything else (a complete record with a bad checksum, a bad magic over non-zero bytes,
// sequence numbers going backwards) is corruption: an error naming the offset and reason.
Result<DecodedJournal> decode_journal(std::string_view bytes);

}  // namespace vxfed::vni
