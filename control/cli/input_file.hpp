// The `-f FILE` of vxfedctl's policy and service commands: the file's text (or stdin), checked
// against vxfedd's request limit before it is sent.
#pragma once

#include <optional>
#include <string>

namespace vxfed::control {

// The file's text, or nullopt after saying why on stderr. "-" is stdin.
std::optional<std::string> read_input(const std::string& path);

// vxfedd closes a connection whose request is over 4 MiB (control.proto); said here instead of
// a dropped connection. False after saying so on stderr.
bool fits_request(const std::string& path, const std::string& text);

// How the file is named in vxfedd's errors: its path, or "stdin".
std::string source_name(const std::string& path);

}  // namespace vxfed::control
