#include "runtime/metrics.hpp"

#include <thread>

#include <gtest/gtest.h>

namespace darcy::runtime {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(metrics, render_follows_the_prometheus_text_format_for_each_kind) {
  metrics_registry r;
  r.counter("jobs_total", "Jobs", {{"kind", "a"}})->add(3);
  r.gauge("depth", "Depth")->set(2.5);
  auto h = r.histogram("took_seconds", "Took", {{"op", "x"}});
  h->observe(0.0002); // the 0.00025 bucket
  h->observe(0.5);    // the 1 bucket
  h->observe(50);     // past every bound
  auto text = r.render();
  struct row {
    const char* line;
  } rows[] = {
    {"# HELP jobs_total Jobs"},
    {"# TYPE jobs_total counter"},
    {"jobs_total{kind=\"a\"} 3"},
    {"# TYPE depth gauge"},
    {"depth 2.5"},
    {"# TYPE took_seconds histogram"},
    {"took_seconds_bucket{op=\"x\",le=\"0.0001\"} 0"},
    {"took_seconds_bucket{op=\"x\",le=\"0.00025\"} 1"},
    {"took_seconds_bucket{op=\"x\",le=\"0.1\"} 1"},
    {"took_seconds_bucket{op=\"x\",le=\"1\"} 2"},
    {"took_seconds_bucket{op=\"x\",le=\"10\"} 2"},
    {"took_seconds_bucket{op=\"x\",le=\"+Inf\"} 3"},
    {"took_seconds_sum{op=\"x\"} 50.5002"},
    {"took_seconds_count{op=\"x\"} 3"},
  };
  for (auto& row : rows)
    EXPECT_TRUE(has_line(text, row.line)) << row.line << "\nin:\n" << text;
}

TEST(metrics, label_values_are_escaped) {
  EXPECT_EQ(render_labels({}), "");
  EXPECT_EQ(render_labels({{"a", "x"}, {"b", "q\"\\\n"}}), "{a=\"x\",b=\"q\\\"\\\\\\n\"}");
}

TEST(metrics, one_series_per_name_and_labels_until_removed) {
  metrics_registry r;
  auto a = r.counter("c", "C", {{"k", "1"}});
  auto b = r.counter("c", "C", {{"k", "1"}});
  EXPECT_EQ(a, b);
  a->add();
  EXPECT_EQ(r.values({"c"})["c"].size(), 1u);
  r.remove("c", {{"k", "1"}});
  EXPECT_TRUE(r.values({"c"})["c"].empty());
  EXPECT_EQ(r.render(), "");
  b->add(); // a holder of a removed series records without effect on the registry
  EXPECT_NE(r.counter("c", "C", {{"k", "1"}}), a);
}

TEST(metrics, collectors_report_at_render_time_until_their_handle_goes) {
  metrics_registry r;
  double rows = 4;
  {
    auto handle = r.add_collector([&rows](metric_sink& sink) {
      sink.gauge("store_rows", "Rows", {{"table", "t"}}, rows);
    });
    EXPECT_TRUE(has_line(r.render(), "store_rows{table=\"t\"} 4"));
    rows = 9;
    auto values = r.values({"store_rows"})["store_rows"];
    ASSERT_EQ(values.size(), 1u);
    EXPECT_EQ(values[0].second, 9);
  }
  EXPECT_EQ(r.render().find("store_rows"), std::string::npos);
}

TEST(metrics, curves_keep_the_newest_points) {
  metrics_registry r;
  for (size_t i = 0; i < metrics_registry::max_curve_points + 5; ++i)
    r.record_curve("loss", static_cast<double>(i), 1.0 / static_cast<double>(i + 1));
  auto curves = r.curves();
  ASSERT_EQ(curves["loss"].size(), metrics_registry::max_curve_points);
  EXPECT_EQ(curves["loss"].front().step, 5);
  EXPECT_EQ(curves["loss"].back().step, metrics_registry::max_curve_points + 4);
}

TEST(metrics, counts_from_many_threads_add_up) {
  metrics_registry r;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&r] {
      for (int i = 0; i < 1000; ++i) {
        r.counter("n", "N")->add();
        r.histogram("h", "H")->observe(0.001);
      }
    });
  for (auto& t : threads)
    t.join();
  EXPECT_TRUE(has_line(r.render(), "n 4000"));
  EXPECT_TRUE(has_line(r.render(), "h_count 4000"));
}

} // namespace
} // namespace darcy::runtime
