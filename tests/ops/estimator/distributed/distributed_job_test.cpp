// A catalog of distributed Estimator jobs: options are checked before a job is built, an
// unknown job names the catalog's jobs, and every job becomes a training job a node registers.
#include "ops/estimator/distributed/distributed_job.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::ops::estimator {
namespace {

/// A catalog of "a" (refuses a "bad" option) and "b"; `built` counts the jobs made.
std::shared_ptr<job_catalog> two_jobs(int& built) {
  auto jobs = std::make_shared<job_catalog>();
  auto make = [&built](const nlohmann::json&) -> caf::expected<estimator_job> {
    ++built;
    return estimator_job{};
  };
  (*jobs)["a"] = {[](const nlohmann::json& o) -> caf::error {
                    return o.contains("bad") ? make_error(errc::invalid_config, "a: bad")
                                             : caf::error{};
                  },
                  make};
  (*jobs)["b"] = {[](const nlohmann::json&) { return caf::error{}; }, make};
  return jobs;
}

TEST(distributed_job, options_are_checked_before_a_job_is_built) {
  int built = 0;
  auto jobs = two_jobs(built);
  struct {
    const char* what;
    std::string job;
    nlohmann::json options;
    std::string refusal; // empty: built
  } cases[] = {
    {"a good job", "a", nlohmann::json::object(), ""},
    {"the other job", "b", {{"bad", 1}}, ""},
    {"options its check refuses", "a", {{"bad", 1}}, "a: bad"},
    {"options that are not an object", "a", nlohmann::json::array(), "must be a JSON object"},
    {"an unknown job, with the catalog's names", "c", nlohmann::json::object(),
     "unknown estimator job 'c' (a, b)"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    int before = built;
    auto job = make_job(*jobs, c.job, c.options);
    if (c.refusal.empty()) {
      EXPECT_TRUE(job) << render(job.error());
      EXPECT_EQ(built, before + 1);
      continue;
    }
    ASSERT_FALSE(job);
    EXPECT_TRUE(is(job.error(), errc::invalid_config)) << render(job.error());
    EXPECT_NE(render(job.error()).find(c.refusal), std::string::npos) << render(job.error());
    EXPECT_EQ(render(check_job_options(*jobs, c.job, c.options)), render(job.error()));
    EXPECT_EQ(built, before) << "a refused job is never built";
  }
}

TEST(distributed_job, every_job_of_the_catalog_becomes_a_training_job) {
  int built = 0;
  auto trained = training_jobs_of(two_jobs(built));
  ASSERT_EQ(trained->size(), 2u);
  EXPECT_TRUE(trained->count("a") && trained->count("b"));
}

} // namespace
} // namespace darcy::ops::estimator
