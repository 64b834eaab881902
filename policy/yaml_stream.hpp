// Splitting a multi-document YAML stream into its documents, each then read with YAML::Load.
// Why not YAML::LoadAll: yaml-cpp 0.7 (Debian 12's) loops without end on some malformed
// streams, adding an empty document per turn until memory runs out (",a: b" is enough), and
// `vxfedctl policy apply -f` takes files people write. YAML::Load reads one document and
// stops, which is safe.
//
// A line that starts with "---" or "..." followed by a blank, a '#' or the line's end is a
// document marker: YAML forbids such a line inside any content (a block or quoted scalar
// included), so cutting there is what a YAML parser does. Text after "---" on the same line
// (`--- {a: 1}`) belongs to the next document and keeps its column. Directives (%YAML) are not
// carried into the next document (kubectl never prints them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace vxfed::policy {

// yaml-cpp 0.7 also reads some malformed documents as null without an error (",a: b": a
// stray ',' at the top level). has_content() lets the caller refuse a null document that has
// text, so such input is refused instead of skipped.

struct YamlDocument {
  std::string text;
  std::size_t first_line = 0;  // the input line (from 0) the text starts at, for errors
};

// Every document of `text`, in order. Empty ones (only blanks and comments, such as the text
// before a leading "---") are included; YAML::Load reads them as null.
std::vector<YamlDocument> split_documents(const std::string& text);

// True when `text` has a line that is neither blank nor a comment.
bool has_content(const std::string& text);

}  // namespace vxfed::policy
