// common/yaml: the one rule per kind of value and the one error format, from tables of cases.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/yaml/reader.hpp"

namespace {

using vxfed::yaml::Field;

// Reads `text` as the document of "f.yaml" with `reader` and returns the error ("" if none).
std::string error_of(const std::string& text, const std::function<void(const Field&)>& reader) {
  auto doc = vxfed::yaml::parse(text, "f.yaml");
  if (!doc) return doc.error();
  auto r = vxfed::yaml::read("f.yaml", [&] {
    reader(Field(*doc, ""));
    return 0;
  });
  return r ? "" : r.error();
}

TEST(YamlReader, BooleansAreYaml12Only) {
  struct Case {
    const char* value;
    int expected;  // 1 true, 0 false, -1 refused
  } cases[] = {
      {"true", 1}, {"True", 1}, {"TRUE", 1}, {"false", 0}, {"False", 0}, {"FALSE", 0},
      {"yes", -1}, {"no", -1}, {"on", -1}, {"off", -1}, {"y", -1}, {"n", -1}, {"1", -1}, {"tRUE", -1},
      {"[true]", -1},
  };
  for (const auto& c : cases) {
    bool got = false;
    const std::string err = error_of(std::string("a: {b: ") + c.value + "}", [&](const Field& top) {
      got = top["a"].boolean("b", false);
    });
    if (c.expected < 0) {
      EXPECT_EQ(err.rfind("f.yaml: a.b: must be true or false (got ", 0), 0u) << c.value << ": " << err;
    } else {
      EXPECT_EQ(err, "") << c.value;
      EXPECT_EQ(got, c.expected == 1) << c.value;
    }
  }
}

TEST(YamlReader, IntegersAreDecimalInRange) {
  struct Case {
    const char* value;
    bool ok;
    std::uint64_t expected;
  } cases[] = {
      {"0", true, 0}, {"7", true, 7}, {"65535", true, 65535}, {"007", true, 7},
      {"65536", false, 0}, {"-1", false, 0}, {"+1", false, 0}, {"0x10", false, 0}, {"1e3", false, 0},
      {"1_000", false, 0}, {"1.0", false, 0}, {"abc", false, 0}, {"99999999999999999999", false, 0},
      {"[1]", false, 0}, {"{x: 1}", false, 0},
  };
  for (const auto& c : cases) {
    std::uint64_t got = 0;
    const std::string err = error_of(std::string("n: ") + c.value, [&](const Field& top) {
      got = top.integer("n", 5, 0, 65535);
    });
    if (c.ok) {
      EXPECT_EQ(err, "") << c.value;
      EXPECT_EQ(got, c.expected) << c.value;
    } else {
      EXPECT_EQ(err.rfind("f.yaml: n: must be an integer 0..65535 (got ", 0), 0u) << c.value << ": " << err;
    }
  }
}

TEST(YamlReader, AbsentAndNullTakeTheDefault) {
  for (const char* doc : {"other: 1", "n:", "n: ~", "n: null"}) {
    std::uint64_t n = 0;
    std::string s;
    bool b = false;
    EXPECT_EQ(error_of(doc, [&](const Field& top) {
                n = top.integer("n", 42, 0, 100);
                s = top["n"].present() ? "present" : top.str("n", "dflt");
                b = top.boolean("n", true);
              }),
              "")
        << doc;
    EXPECT_EQ(n, 42u) << doc;
    EXPECT_EQ(s, "dflt") << doc;
    EXPECT_TRUE(b) << doc;
  }
  EXPECT_EQ(error_of("n:", [](const Field& top) { (void)top.required_str("n"); }), "f.yaml: n: is required");
  EXPECT_EQ(error_of("a: {}", [](const Field& top) { (void)top["a"]["b"].integer(1, 2); }), "f.yaml: a.b: is required");
}

TEST(YamlReader, ErrorsNameTheFileTheFieldAndTheReason) {
  struct Case {
    const char* what;
    const char* yaml;
    std::function<void(const Field&)> reader;
    const char* error;  // the whole message
  } cases[] = {
      {"unknown key", "a: {b: 1, c: 2}", [](const Field& t) { t["a"].allow({"b"}); },
       "f.yaml: a.c: unknown key (expected one of: b)"},
      {"unknown top key", "x: 1", [](const Field& t) { t.allow({"a", "b"}); },
       "f.yaml: x: unknown key (expected one of: a, b)"},
      {"not a mapping", "a: [1]", [](const Field& t) { t["a"].allow({"b"}); }, "f.yaml: a: must be a mapping (got a list)"},
      {"top not a mapping", "[1]", [](const Field& t) { t.allow({"a"}); }, "f.yaml: (top level): must be a mapping (got a list)"},
      {"string from a list", "a: [1]", [](const Field& t) { (void)t.str("a", ""); }, "f.yaml: a: must be a string (got a list)"},
      {"list item path", "a: [x, [y]]", [](const Field& t) { (void)t["a"].strings(); },
       "f.yaml: a[1]: must be a string (got a list)"},
      {"not a list", "a: x", [](const Field& t) { (void)t["a"].items(); }, "f.yaml: a: must be a list (got 'x')"},
      {"map of strings", "a: {k: [1]}", [](const Field& t) { (void)t["a"].string_map(); },
       "f.yaml: a.k: must be a string (got a list)"},
      {"own reason", "a: {b: 3}", [](const Field& t) { t["a"]["b"].fail("is odd"); }, "f.yaml: a.b: is odd"},
      {"syntax", "a: [", [](const Field&) {}, "f.yaml:1:1: YAML syntax error: "},
  };
  for (const auto& c : cases) {
    const std::string err = error_of(c.yaml, c.reader);
    EXPECT_EQ(err.rfind(c.error, 0), 0u) << c.what << ": " << err;
  }
}

TEST(YamlReader, ValuesComeThroughAsWritten) {
  std::string name;
  std::vector<std::string> list;
  std::map<std::string, std::string> labels;
  std::vector<std::string> keys;
  ASSERT_EQ(error_of("name: red\nlist: [a, 'b c']\nlabels: {tier: gpu}\nm: {z: 1, a: 2}\n", [&](const Field& t) {
              name = t.required_str("name");
              list = t["list"].strings();
              labels = t["labels"].string_map();
              for (const auto& [k, v] : t["m"].entries()) keys.push_back(k + "=" + v.path());
            }),
            "");
  EXPECT_EQ(name, "red");
  EXPECT_EQ(list, (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(labels.at("tier"), "gpu");
  EXPECT_EQ(keys, (std::vector<std::string>{"z=m.z", "a=m.a"})) << "file order, dotted paths";
}

TEST(YamlReader, WithoutASourceTheErrorIsFieldAndReason) {
  auto r = vxfed::yaml::read("", [] {
    Field(YAML::Load("hold: 2"), "bgp")["hold"].fail("must be 0 or 3..65535");
    return 0;
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "bgp.hold: must be 0 or 3..65535");
}

}  // namespace
