// read_file: a whole file's bytes, or why not (docs/conventions.md: results and errors). The one
// way vxfed reads a file into memory: configuration, state records, PEM files, /proc and /sys.
// A caller that treats a missing file as "absent" asks the error (`absent()`); one that must
// not hold an unbounded file gives `max_bytes`. Files read as they are parsed (the route cache)
// and line-by-line reads of /proc are not its job.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include "common/result.hpp"

namespace vxfed {

struct FileReadError {
  std::string path;
  int code = 0;        // the errno of open(2) or read(2); EFBIG when over max_bytes
  std::string reason;  // strerror(code), or "larger than N bytes"

  bool absent() const;                                               // ENOENT
  std::string message() const { return "cannot read " + path + ": " + reason; }
};

class [[nodiscard]] FileRead : public ValueOr<std::string, FileReadError> {
 public:
  using ValueOr<std::string, FileReadError>::ValueOr;
  const FileReadError& error() const { return this->error_value(); }
};

inline constexpr std::size_t kNoSizeLimit = std::numeric_limits<std::size_t>::max();

// The bytes of the file at `path`, read to its end (a /proc file's size is known only then). A
// directory is an error (EISDIR), as is a file with more than `max_bytes` bytes: it is read
// no further than one byte past the cap.
FileRead read_file(const std::string& path, std::size_t max_bytes = kNoSizeLimit);

}  // namespace vxfed
