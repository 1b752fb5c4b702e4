// model_retirer: a replaced model is let go on the retirer's thread, the caller never waits for
// its teardown, and the retirer's destructor waits for every model handed over.
#include "apps/serving/model_retirer.hpp"

#include <future>
#include <thread>

#include <gtest/gtest.h>

namespace darcy::serving {
namespace {

/// A model whose teardown records its thread and waits until `release` is set.
struct slow_model {
  slow_model(std::promise<std::thread::id>* p, std::shared_future<void> r)
    : torn_down(p), release(std::move(r)) {}
  slow_model(const slow_model&) = delete;
  std::promise<std::thread::id>* torn_down;
  std::shared_future<void> release;
  ~slow_model() {
    release.wait();
    torn_down->set_value(std::this_thread::get_id());
  }
};

TEST(model_retirer, retire_returns_before_the_teardown_which_runs_on_another_thread) {
  std::promise<std::thread::id> torn_down;
  std::promise<void> release;
  auto done = torn_down.get_future();
  {
    model_retirer retirer;
    retirer.retire(std::make_shared<slow_model>(&torn_down, release.get_future()));
    // Still held up by `release`: had retire() torn it down itself, it would not return.
    EXPECT_EQ(retirer.retired(), 0u);
    release.set_value();
  } // the destructor waits for the teardown
  EXPECT_NE(done.get(), std::this_thread::get_id());
}

TEST(model_retirer, a_model_still_referenced_elsewhere_outlives_its_retirement) {
  std::promise<std::thread::id> torn_down;
  std::promise<void> release;
  release.set_value();
  auto done = torn_down.get_future();
  auto model = std::make_shared<slow_model>(&torn_down, release.get_future());
  {
    model_retirer retirer;
    retirer.retire(model);
    retirer.retire(nullptr); // nothing to let go
  }
  EXPECT_EQ(done.wait_for(std::chrono::seconds{0}), std::future_status::timeout);
  model.reset();
  EXPECT_EQ(done.get(), std::this_thread::get_id());
}

TEST(model_retirer, every_model_handed_over_is_let_go_in_turn) {
  model_retirer retirer;
  std::vector<std::promise<std::thread::id>> torn_down(3);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future();
  for (auto& p : torn_down)
    retirer.retire(std::make_shared<slow_model>(&p, go));
  release.set_value();
  for (auto& p : torn_down)
    EXPECT_NE(p.get_future().get(), std::this_thread::get_id());
}

} // namespace
} // namespace darcy::serving
