// The options of the distributed Estimator jobs: the catalog's checks refuse what make_job
// would, without reading any data; a stream job's worker starts where the global step says.
#include "apps/estimator/estimator_jobs.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::estimator_apps {
namespace {

TEST(estimator_jobs, options_are_checked_without_reading_the_data) {
  using nlohmann::json;
  auto nan = std::numeric_limits<double>::quiet_NaN();
  struct {
    const char* what;
    std::string job;
    json options;
    std::string message; // empty: accepted
  } cases[] = {
    // The data paths do not exist: only the options are read.
    {"good fashion-mnist options", "fashion-mnist", {{"data", "/nonexistent"}}, ""},
    {"good brown-genre options", "brown-genre", {{"corpus", "/nonexistent"}}, ""},
    {"an unknown job", "mnist", json::object(),
     "unknown estimator job 'mnist' (brown-genre, ctr, ctr-stream, fashion-mnist)"},
    {"good ctr-stream options",
     "ctr-stream",
     {{"train", "generate"}, {"stream", {{"source", "generate"}, {"max_ids", 100}}}},
     ""},
    {"ctr-stream without its stream",
     "ctr-stream",
     {{"train", "generate"}},
     "ctr-stream job options: no \"stream\" object"},
    {"ctr-stream on standard input",
     "ctr-stream",
     {{"train", "-"}, {"stream", {{"source", "-"}}}},
     "not standard input"},
    {"ctr-stream with a stream field of the wrong type",
     "ctr-stream",
     {{"train", "generate"}, {"stream", {{"source", "generate"}, {"drift_rows", "many"}}}},
     "ctr-stream job options"},
    {"good ctr options", "ctr", {{"train", "/nonexistent"}, {"eval", "/nonexistent"}}, ""},
    {"ctr without a training file", "ctr", json::object(), "ctr: a training file is needed"},
    {"ctr with an unknown model",
     "ctr",
     {{"train", "t"}, {"model", "gbdt"}},
     "model must be dlrm or wide-deep"},
    {"options that are not an object", "brown-genre", json::array(), "must be a JSON object"},
    {"a NaN learning rate",
     "brown-genre",
     {{"learning_rate", nan}},
     "brown-genre job options: optimizer: learning_rate must be a positive number"},
    {"a negative learning rate",
     "fashion-mnist",
     {{"learning_rate", -1.0}},
     "fashion-mnist job options: optimizer: learning_rate must be a positive number"},
    {"a zero learning rate",
     "brown-genre",
     {{"learning_rate", 0.0}},
     "learning_rate must be a positive number"},
    {"a batch of 0", "fashion-mnist", {{"batch", 0}}, "batch and threads must be > 0"},
    {"a bucket count of 0", "brown-genre", {{"hash_buckets", 0}}, "sizes must be > 0"},
    {"a field of the wrong type", "brown-genre", {{"batch", "big"}}, "brown-genre job options"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto err = ops::estimator::check_job_options(*estimator_jobs(), c.job, c.options);
    if (c.message.empty()) {
      EXPECT_FALSE(err) << render(err);
      continue;
    }
    EXPECT_TRUE(is(err, errc::invalid_config)) << render(err);
    EXPECT_NE(render(err).find(c.message), std::string::npos) << render(err);
    auto job = ops::estimator::make_job(*estimator_jobs(), c.job, c.options);
    ASSERT_FALSE(job);
    EXPECT_EQ(render(job.error()), render(err));
  }
}

TEST(estimator_jobs,
     a_stream_worker_joining_at_a_global_step_starts_after_the_rows_trained_by_then) {
  struct position_case {
    const char* what;
    uint64_t stream_rows; // 0: no end
    uint64_t step;
    std::string want;
  };
  for (auto& c : std::vector<position_case>{{"an endless stream", 0, 10, "320"},
                                            {"before the stream's end", 1000, 10, "320"},
                                            {"past the stream's end", 1000, 100, "1000"}}) {
    SCOPED_TRACE(c.what);
    auto job = ops::estimator::make_job(
      *estimator_jobs(), "ctr-stream",
      {{"train", "generate"},
       {"batch", 32},
       {"stream", {{"source", "generate"}, {"max_ids", 100}, {"rows", c.stream_rows}}}});
    ASSERT_TRUE(job) << render(job.error());
    ASSERT_TRUE(job->worker_position);
    EXPECT_EQ(job->worker_position(c.step), c.want);
  }
  // A job on files starts each worker at the beginning of its partition.
  auto files = ops::estimator::make_job(*estimator_jobs(), "ctr",
                                        {{"train", "/nonexistent"}, {"eval", "/nonexistent"}});
  ASSERT_TRUE(files) << render(files.error());
  EXPECT_FALSE(files->worker_position);
}

} // namespace
} // namespace darcy::estimator_apps
