// Reading a YAML configuration: one way to walk it, one error format, one rule per kind of
// value, so that vxfedd's file (control/daemon/daemon_config.cpp) and its `bgp:` section
// (bgp/config.cpp) read and complain alike. See docs/conventions.md: configuration files.
//
// Errors read "FIELD: REASON" with the dotted path of the field ("bgp.peers[1].hold: must be
// an integer 0..65535 (got 'x')"); read() prefixes the file, giving "FILE: FIELD: REASON".
//
// The rules:
//   - A key that is absent and a key whose value is null (`key:` with nothing after it) are
//     the same: the default applies, or "is required".
//   - Every key of a mapping must be one the reader knows (allow()): a typo must not fall
//     back to a default silently.
//   - Booleans are YAML 1.2's: true, True, TRUE, false, False, FALSE. Not yes/no/on/off/y/n
//     (YAML 1.1), which read as strings in YAML 1.2 and so differently by other tools.
//   - Integers are decimal digits only (no sign, no 0x, no 1e3, no '_'), checked against the
//     range the field allows.
//   - Strings are any scalar, as written.
//
// FieldError is how the readers report; it is thrown and caught inside one read() call and
// never leaves it, so no exception crosses the caller's library boundary.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/result.hpp"

namespace vxfed::yaml {

struct FieldError {
  std::string field;   // dotted path; "(top level)" for the document itself
  std::string reason;  // may be empty when `field` already says "field: reason"
  std::string message() const { return reason.empty() ? field : field + ": " + reason; }
};

[[noreturn]] void fail(const std::string& field, const std::string& reason);

// A node of the document with its dotted path. Absent fields are Fields too (present() is
// false), so a reader can ask for a child without checking first.
class Field {
 public:
  Field(YAML::Node node, std::string path) : node_(std::move(node)), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }
  bool present() const { return node_.IsDefined() && !node_.IsNull(); }

  // A key of this mapping (absent when this is absent). Call allow() first.
  Field operator[](const std::string& key) const;
  bool has(const std::string& key) const { return (*this)[key].present(); }

  // This must be a mapping (when present) whose keys are all in `keys`.
  void allow(std::initializer_list<const char*> keys) const;
  void expect_map() const;

  // The value itself; each fails with the field's path when it is absent or of another kind.
  std::string str() const;
  std::uint64_t integer(std::uint64_t min, std::uint64_t max) const;
  bool boolean() const;
  std::vector<Field> items() const;                           // a list ("name[i]" paths)
  std::vector<std::pair<std::string, Field>> entries() const;  // a mapping, in file order
  std::vector<std::string> strings() const;                   // a list of strings
  std::map<std::string, std::string> string_map() const;      // a mapping of strings

  // The same for a key of this mapping, with the default when it is absent.
  std::string str(const std::string& key, const std::string& fallback) const;
  std::string required_str(const std::string& key) const;
  std::uint64_t integer(const std::string& key, std::uint64_t fallback, std::uint64_t min, std::uint64_t max) const;
  std::uint64_t required_integer(const std::string& key, std::uint64_t min, std::uint64_t max) const;
  bool boolean(const std::string& key, bool fallback) const;

  [[noreturn]] void fail(const std::string& reason) const { yaml::fail(path_, reason); }

 private:
  YAML::Node node_;
  std::string path_;
};

// The document in `text`; a syntax error reads "SOURCE:LINE:COLUMN: YAML syntax error: ...".
Result<YAML::Node> parse(const std::string& text, const std::string& source);

// Runs `read` (which returns a value and throws FieldError through the readers above) and
// turns what it throws into an error: "SOURCE: FIELD: REASON", or "FIELD: REASON" when
// source is empty (a section handed over by a reader that adds the file itself).
template <typename Read>
auto read(const std::string& source, Read&& read) -> Result<decltype(read())> {
  const std::string prefix = source.empty() ? "" : source + ": ";
  try {
    return read();
  } catch (const FieldError& e) {
    return make_error(prefix + e.message());
  } catch (const YAML::Exception& e) {  // yaml-cpp's own (a malformed node), never expected
    return make_error(prefix + "invalid YAML: " + e.what());
  }
}

}  // namespace vxfed::yaml
