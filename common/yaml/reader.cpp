#include "common/yaml/reader.hpp"

namespace vxfed::yaml {

namespace {

std::string child_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// What a node is, for "got ..." in errors.
std::string got(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "'" + node.Scalar() + "'";
}

}  // namespace

void fail(const std::string& field, const std::string& reason) {
  throw FieldError{field.empty() ? "(top level)" : field, reason};
}

Field Field::operator[](const std::string& key) const {
  if (!present()) return Field(YAML::Node(YAML::NodeType::Undefined), child_path(path_, key));
  expect_map();
  return Field(node_[key], child_path(path_, key));
}

void Field::expect_map() const {
  if (present() && !node_.IsMap()) fail("must be a mapping (got " + got(node_) + ")");
}

void Field::allow(std::initializer_list<const char*> keys) const {
  if (!present()) return;
  expect_map();
  for (const auto& kv : node_) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    bool known = false;
    for (const char* k : keys) known = known || key == k;
    if (known) continue;
    std::string list;
    for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
    yaml::fail(child_path(path_, key), "unknown key (expected one of: " + list + ")");
  }
}

std::string Field::str() const {
  if (!present()) fail("is required");
  if (!node_.IsScalar()) fail("must be a string (got " + got(node_) + ")");
  return node_.Scalar();
}

std::uint64_t Field::integer(std::uint64_t min, std::uint64_t max) const {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  if (!present()) fail("is required");
  if (!node_.IsScalar()) fail("must be an integer " + range + " (got " + got(node_) + ")");
  const std::string& text = node_.Scalar();
  bool ok = !text.empty() && text.size() <= 19;  // 19 digits always fit in 64 bits
  std::uint64_t v = 0;
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok || v < min || v > max) fail("must be an integer " + range + " (got " + got(node_) + ")");
  return v;
}

bool Field::boolean() const {
  if (!present()) fail("is required");
  const std::string text = node_.IsScalar() ? node_.Scalar() : "";
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  fail("must be true or false (got " + got(node_) + ")");
}

std::vector<Field> Field::items() const {
  std::vector<Field> out;
  if (!present()) return out;
  if (!node_.IsSequence()) fail("must be a list (got " + got(node_) + ")");
  for (std::size_t i = 0; i < node_.size(); ++i) out.emplace_back(node_[i], path_ + "[" + std::to_string(i) + "]");
  return out;
}

std::vector<std::pair<std::string, Field>> Field::entries() const {
  std::vector<std::pair<std::string, Field>> out;
  if (!present()) return out;
  expect_map();
  for (const auto& kv : node_) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    out.emplace_back(key, Field(kv.second, child_path(path_, key)));
  }
  return out;
}

std::vector<std::string> Field::strings() const {
  std::vector<std::string> out;
  for (const auto& item : items()) out.push_back(item.str());
  return out;
}

std::map<std::string, std::string> Field::string_map() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : entries()) out[key] = value.str();
  return out;
}

std::string Field::str(const std::string& key, const std::string& fallback) const {
  const Field f = (*this)[key];
  return f.present() ? f.str() : fallback;
}

std::string Field::required_str(const std::string& key) const { return (*this)[key].str(); }

std::uint64_t Field::integer(const std::string& key, std::uint64_t fallback, std::uint64_t min,
                             std::uint64_t max) const {
  const Field f = (*this)[key];
  return f.present() ? f.integer(min, max) : fallback;
}

std::uint64_t Field::required_integer(const std::string& key, std::uint64_t min, std::uint64_t max) const {
  return (*this)[key].integer(min, max);
}

bool Field::boolean(const std::string& key, bool fallback) const {
  const Field f = (*this)[key];
  return f.present() ? f.boolean() : fallback;
}

Result<YAML::Node> parse(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return make_error(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": YAML syntax error: " + e.msg);
  }
}

}  // namespace vxfed::yaml
