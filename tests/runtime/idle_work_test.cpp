#include "runtime/idle_work.hpp"

#include <sched.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace darcy::runtime {
namespace {

using namespace std::chrono_literals;

TEST(idle_work, EnteringIdlePriorityPutsTheThreadInSchedIdle) {
  int policy = -1;
  bool entered = false;
  std::thread t{[&] {
    entered = enter_idle_priority();
    policy = ::sched_getscheduler(0);
  }};
  t.join();
  ASSERT_TRUE(entered);
  EXPECT_EQ(policy, SCHED_IDLE);
  EXPECT_NE(::sched_getscheduler(0), SCHED_IDLE); // the caller is left as it was
}

/// The work of one case: the idle run answers `idle_answer`, after `release` when
/// `idle_waits`; the caller's run answers 7.
struct probe {
  std::thread::id caller = std::this_thread::get_id();
  bool idle_waits = false;
  int idle_answer = 0;
  std::atomic<int> runs{0};
  std::atomic<int> idle_policy{-1};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> idle_ended;
};

TEST(idle_work, AnswersTheIdleRunAndRunsItAgainInTheCallerOnlyWhenItStarves) {
  struct test_case {
    std::string name;
    bool idle_waits; // a run that takes no CPU time looks starved
    std::chrono::milliseconds patience;
    int answer;
    int runs_before_release;
  };
  std::vector<test_case> cases{
    {"idle run ends", false, 60000ms, 42, 1},
    {"idle run starves", true, 10ms, 7, 2},
  };
  for (auto& c : cases) {
    auto p = std::make_shared<probe>();
    p->idle_waits = c.idle_waits;
    p->idle_answer = 42;
    auto answer = run_in_idle_time(
      [p] {
        ++p->runs;
        if (std::this_thread::get_id() == p->caller)
          return 7;
        p->idle_policy = ::sched_getscheduler(0);
        if (p->idle_waits)
          p->released.wait();
        p->idle_ended.set_value();
        return p->idle_answer;
      },
      c.patience);
    EXPECT_EQ(answer, c.answer) << c.name;
    EXPECT_EQ(p->runs, c.runs_before_release) << c.name;
    p->release.set_value();
    // The run left behind ends on its own thread, and its answer is dropped.
    EXPECT_EQ(p->idle_ended.get_future().wait_for(60s), std::future_status::ready) << c.name;
    EXPECT_EQ(p->idle_policy, SCHED_IDLE) << c.name;
  }
}

} // namespace
} // namespace darcy::runtime
