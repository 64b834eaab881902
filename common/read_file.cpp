#include "common/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.hpp"

namespace vxfed {

namespace {

FileReadError failed(const std::string& path, int code) { return FileReadError{path, code, std::strerror(code)}; }

}  // namespace

bool FileReadError::absent() const { return code == ENOENT; }

FileRead read_file(const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return failed(path, errno);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return failed(path, errno);
  if (S_ISDIR(st.st_mode)) return failed(path, EISDIR);
  std::string out;
  // A regular file's size is a hint (it may grow while read); /proc and /sys report 0.
  if (S_ISREG(st.st_mode) && st.st_size > 0 && static_cast<std::size_t>(st.st_size) <= max_bytes)
    out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const std::size_t room = max_bytes - out.size();  // out.size() <= max_bytes here
    const std::size_t want = room < sizeof buf ? room + 1 : sizeof buf;  // one past the cap shows it
    const ssize_t n = ::read(fd.get(), buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return failed(path, errno);
    }
    if (n == 0) return out;
    if (static_cast<std::size_t>(n) > room)
      return FileReadError{path, EFBIG, "larger than " + std::to_string(max_bytes) + " bytes"};
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace vxfed
