// Tests ops/online/online_trainer: the options no run can take, when syncs come, and where a
// rerun resumes on a stream that can be read again and on one that cannot (a pipe, whose writer
// resumes). The loop's serving side (pushes, copies following the syncs) is tested through
// `darcy estimator ctr --stream` in tests/apps/estimator/ctr_test.cpp.
#include "ops/online/online_trainer.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_row_stream.hpp"
#include "ops/estimator/canned.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops::online {
namespace {

namespace est = ops::estimator;
namespace ce = compute::estimator;

TEST(online_trainer, options_no_run_can_take_are_refused_by_name) {
  struct case_t {
    const char* name;
    std::function<void(online_options&)> change;
    const char* says;
  } cases[] = {
    {"a window of no rows", [](online_options& o) { o.window_rows = 0; }, "window"},
    {"a batch of no rows", [](online_options& o) { o.batch = 0; }, "batch"},
    {"a push without a sync folder",
     [](online_options& o) { o.sync.push.url = "http://127.0.0.1:1/v1/models/m"; },
     "needs a sync folder"},
    {"a push to https",
     [](online_options& o) {
       o.sync.dir = "sync";
       o.sync.push.url = "https://127.0.0.1:1/v1/models/m";
     },
     "is not http://HOST:PORT/PATH"},
    {"a push to no port",
     [](online_options& o) {
       o.sync.dir = "sync";
       o.sync.push.url = "http://localhost/v1/models/m";
     },
     "is not http://HOST:PORT/PATH"},
  };
  for (auto& c : cases) {
    online_options o;
    c.change(o);
    auto err = validate(o);
    EXPECT_TRUE(is(err, errc::invalid_config)) << c.name << ": " << render(err);
    EXPECT_NE(render(err).find(c.says), std::string::npos) << c.name << ": " << render(err);
  }
  online_options good;
  good.sync = {.dir = "sync", .push = {.url = "http://127.0.0.1:8500/v1/models/ctr"}};
  EXPECT_FALSE(validate(good));
}

/// A logistic regression on three categorical fields of the generated clicks, one weight a
/// raw id in `s`'s service.
est::model_fn three_field_model(session& s) {
  std::vector<est::dynamic_field> fields;
  for (size_t f = 0; f < 3; ++f) {
    de_config c{.name = "w" + std::to_string(f), .dim = 1};
    c.optimizer = {.kind = optimizer_kind::adagrad, .learning_rate = 0.05f};
    c.init = {.kind = init_kind::zeros, .seed = 1};
    fields.push_back({ctr::ctr_field_key(f), nullptr, c});
  }
  auto columns = est::dynamic_embedding_columns(s, fields, ce::combiner::sum);
  EXPECT_TRUE(columns) << render(columns.error());
  auto fn =
    est::linear_model({.linear_columns = {*columns}, .head = {.kind = ce::head_kind::binary}});
  EXPECT_TRUE(fn) << render(fn.error());
  return *fn;
}

struct run_result {
  caf::error err;
  std::vector<window_report> windows;
  /// Each window's first 8 rows' C1, as the stream gave them.
  std::vector<std::vector<std::vector<std::string>>> first_ids;
};

/// Runs `windows` windows of 500 generated rows (a fresh generator each time) into `sync_dir`.
run_result run(const std::string& sync_dir, uint64_t windows, bool can_skip,
               std::chrono::milliseconds every = std::chrono::milliseconds{0}) {
  run_result out;
  auto s = session::open({.name = "online", .shards = 2});
  EXPECT_TRUE(s) << render(s.error());
  auto generated = ctr::open_ctr_stream("generate", {.generator = {.seed = 3, .max_ids = 1000}});
  EXPECT_TRUE(generated) << render(generated.error());
  auto rows = ctr::ctr_row_stream(std::move(*generated), can_skip, std::chrono::milliseconds{1});
  online_options o{.window_rows = 500, .batch = 100, .max_windows = windows};
  o.sync = {.dir = sync_dir, .every = every, .dense_every = std::chrono::milliseconds{0}};
  o.tables = {"w0", "w1", "w2"};
  o.before_window = [&](uint64_t, const est::example_table& t) -> caf::error {
    auto& c1 = t.features.at(ctr::ctr_field_key(0)).strings;
    out.first_ids.emplace_back(c1.begin(), c1.begin() + std::min<size_t>(8, c1.size()));
    return {};
  };
  out.err = run_online(**s, three_field_model(**s), {.seed = 1, .threads = 1}, *rows, o,
                       [&](const window_report& w) {
                         out.windows.push_back(w);
                         return caf::error{};
                       });
  return out;
}

TEST(online_trainer, a_sync_comes_each_period_and_after_the_last_window_whatever_the_period) {
  test::temp_dir dir{"online_syncs"};
  auto r = run(dir.path() + "/sync", 3, true, std::chrono::hours{1});
  ASSERT_FALSE(r.err) << render(r.err);
  ASSERT_EQ(r.windows.size(), 3u);
  EXPECT_FALSE(r.windows[0].sync_checkpoint.empty()) << "the first window starts the chain";
  EXPECT_TRUE(r.windows[1].sync_checkpoint.empty()) << "an hour has not passed";
  EXPECT_FALSE(r.windows[2].sync_checkpoint.empty()) << "the last window is always synced";
  EXPECT_TRUE(r.windows[2].dense_synced);
  EXPECT_EQ(r.windows[2].rows, 1500u);
  EXPECT_GT(r.windows[2].embedding_rows, 0u);
}

TEST(online_trainer, a_rerun_resumes_after_its_last_sync_skipping_only_what_it_can_read_again) {
  test::temp_dir dir{"online_resume"};
  auto whole = run(dir.path() + "/whole", 4, true);
  ASSERT_FALSE(whole.err) << render(whole.err);
  struct case_t {
    bool can_skip;
    /// The window of the whole run whose rows the resumed run's first window holds.
    size_t same_rows_as;
  } cases[] = {{true, 2}, {false, 0}};
  for (auto& c : cases) {
    SCOPED_TRACE(c.can_skip ? "a stream read again" : "a pipe");
    auto sync_dir = dir.path() + (c.can_skip ? "/again" : "/pipe");
    ASSERT_FALSE(run(sync_dir, 2, c.can_skip).err);
    auto resumed = run(sync_dir, 1, c.can_skip);
    ASSERT_FALSE(resumed.err) << render(resumed.err);
    ASSERT_EQ(resumed.windows.size(), 1u);
    EXPECT_EQ(resumed.windows[0].rows, 1500u) << "1,000 rows restored, then its own";
    EXPECT_EQ(resumed.first_ids[0], whole.first_ids[c.same_rows_as]);
  }
}

} // namespace
} // namespace darcy::ops::online
