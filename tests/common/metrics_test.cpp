// The Prometheus text writer: the format's details (HELP/TYPE, escaping, cumulative buckets,
// float spelling) and the naming rules it enforces.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/metrics/exposition.hpp"
#include "common/metrics/histogram.hpp"

namespace m = vxfed::metrics;

TEST(Exposition, FamilyWithLabelledSamples) {
  m::Exposition w;
  w.family("vxfed_x_packets_total", m::Type::counter, "Packets.\nSecond line with a \\ backslash.")
      .sample(std::uint64_t{3}, {{"port", "uplink"}, {"queue", "0"}})
      .sample(std::uint64_t{18446744073709551615u}, {{"port", "a\"b\\c\nd"}});
  EXPECT_TRUE(w.errors().empty());
  EXPECT_EQ(w.take(),
            "# HELP vxfed_x_packets_total Packets.\\nSecond line with a \\\\ backslash.\n"
            "# TYPE vxfed_x_packets_total counter\n"
            "vxfed_x_packets_total{port=\"uplink\",queue=\"0\"} 3\n"
            "vxfed_x_packets_total{port=\"a\\\"b\\\\c\\nd\"} 18446744073709551615\n");
}

TEST(Exposition, FloatsAsPrometheusSpellsThem) {
  EXPECT_EQ(m::format_value(0.5), "0.5");
  EXPECT_EQ(m::format_value(1.0), "1");
  EXPECT_EQ(m::format_value(0.0001), "0.0001");
  EXPECT_EQ(m::format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(m::format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(m::format_value(std::nan("")), "NaN");
}

TEST(Exposition, HistogramBucketsAreCumulative) {
  m::Histogram h({0.1, 1, 10});
  h.observe(0.05);
  h.observe(0.1);   // "less than or equal": the 0.1 bucket
  h.observe(0.5);
  h.observe(100);   // +Inf only
  EXPECT_EQ(h.bucket_counts(), (std::vector<std::uint64_t>{2, 1, 0, 1}));
  m::Exposition w;
  w.family("vxfed_x_duration_seconds", m::Type::histogram, "D.").histogram(h, {{"op", "get"}});
  EXPECT_TRUE(w.errors().empty());
  EXPECT_EQ(w.take(),
            "# HELP vxfed_x_duration_seconds D.\n"
            "# TYPE vxfed_x_duration_seconds histogram\n"
            "vxfed_x_duration_seconds_bucket{op=\"get\",le=\"0.1\"} 2\n"
            "vxfed_x_duration_seconds_bucket{op=\"get\",le=\"1\"} 3\n"
            "vxfed_x_duration_seconds_bucket{op=\"get\",le=\"10\"} 3\n"
            "vxfed_x_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"
            "vxfed_x_duration_seconds_sum{op=\"get\"} 100.65\n"
            "vxfed_x_duration_seconds_count{op=\"get\"} 4\n");
}

TEST(Exposition, HistogramFromAnotherProcess) {
  auto h = m::Histogram::from_parts({1, 2}, {1, 2, 3}, 9.5, 6);
  EXPECT_EQ(h.count(), 6u);
  EXPECT_EQ(h.bucket_counts()[2], 3u);
  auto bad = m::Histogram::from_parts({1, 2}, {1, 2}, 9.5, 6);  // counts of the wrong length
  EXPECT_EQ(bad.count(), 0u);
  EXPECT_EQ(bad.bucket_counts(), (std::vector<std::uint64_t>{0, 0, 0}));
}

TEST(Exposition, NamingRulesRefusedAndNamed) {
  m::Exposition w;
  w.counter("vxfed_x_packets", "no _total", 1);
  w.gauge("vxfed_x_things_total", "a gauge with _total", 1);
  w.gauge("9bad", "bad name", 1);
  w.gauge("vxfed_x_ok", "fine", 1);
  w.gauge("vxfed_x_ok", "twice", 2);
  w.family("vxfed_x_h_seconds", m::Type::histogram, "h").sample(std::uint64_t{1});
  ASSERT_EQ(w.errors().size(), 5u);
  EXPECT_NE(w.errors()[0].find("without the _total suffix"), std::string::npos);
  EXPECT_NE(w.errors()[1].find("not a counter"), std::string::npos);
  EXPECT_NE(w.errors()[2].find("not a valid metric name"), std::string::npos);
  EXPECT_NE(w.errors()[3].find("declared twice"), std::string::npos);
  EXPECT_NE(w.errors()[4].find("plain sample in a histogram"), std::string::npos);
  // Only the one valid family was written.
  EXPECT_EQ(w.take(), "# HELP vxfed_x_ok fine\n# TYPE vxfed_x_ok gauge\nvxfed_x_ok 1\n"
                      "# HELP vxfed_x_h_seconds h\n# TYPE vxfed_x_h_seconds histogram\n");
}
