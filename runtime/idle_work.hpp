// Work that should only take CPU time nobody else wants, such as a shard reading a sync beside
// the lookups it serves: it runs on a SCHED_IDLE thread, which any other thread that wakes
// preempts at once. When that thread starves (the CPUs are busy), the caller does the work too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

namespace darcy::runtime {

/// Moves the calling thread to SCHED_IDLE; false when the system refuses, leaving it as it was.
/// The thread cannot move back without CAP_SYS_NICE.
bool enter_idle_priority();

/// The CPU clock of thread `t`; nullopt when the system has none for it.
std::optional<clockid_t> cpu_clock_of(std::thread& t);

/// CPU time `clock` has counted; nullopt when it cannot be read (its thread ended).
std::optional<std::chrono::nanoseconds> cpu_time(std::optional<clockid_t> clock);

/// Runs `work` on a thread of idle priority and answers its result. Each time `patience` passes
/// with `work` unfinished, having had less than half of that time on a CPU, the caller stops
/// waiting: it runs `work` itself, at its own priority, and answers whichever run ends first.
/// `work` must be safe to run twice at once, with the same result. A run left behind ends on
/// its own thread, whose result is dropped. When no thread can be started, the caller runs it.
template <class F>
std::invoke_result_t<F&> run_in_idle_time(F work, std::chrono::milliseconds patience) {
  using result = std::invoke_result_t<F&>;
  struct shared_state {
    explicit shared_state(F f) : work(std::move(f)) {}
    F work;
    std::mutex mutex;
    std::condition_variable finished;
    std::optional<result> answer;
  };
  auto s = std::make_shared<shared_state>(std::move(work));
  std::thread idle;
  try {
    idle = std::thread{[s] {
      enter_idle_priority();
      result r = s->work();
      std::lock_guard<std::mutex> guard{s->mutex};
      if (!s->answer)
        s->answer.emplace(std::move(r));
      s->finished.notify_all();
    }};
  } catch (const std::system_error&) { // no thread to be had: the caller does the work
    return s->work();
  }
  auto clock = cpu_clock_of(idle);
  std::chrono::nanoseconds used{0};
  std::unique_lock<std::mutex> lock{s->mutex};
  // While the answer is missing, the idle thread is alive: it sets the answer before it ends.
  while (!s->finished.wait_for(lock, patience, [&] { return s->answer.has_value(); })) {
    auto now = cpu_time(clock);
    if (now && *now - used >= patience / 2) {
      used = *now;
      continue;
    }
    lock.unlock();
    result mine = s->work();
    lock.lock();
    if (!s->answer)
      s->answer.emplace(std::move(mine));
  }
  result out = std::move(*s->answer);
  lock.unlock();
  idle.detach();
  return out;
}

} // namespace darcy::runtime
