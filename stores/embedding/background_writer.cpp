#include "stores/embedding/background_writer.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "messages/error.hpp"
#include "stores/embedding/background_priority.hpp"

namespace darcy::stores {

namespace {

caf::error run_job(std::function<caf::error()> job) {
  try {
    return job();
  } catch (const std::exception& e) {
    return make_error(errc::io_error, std::string{"a background write failed: "} + e.what());
  }
}

} // namespace

class writer_thread {
public:
  writer_thread() : thread_([this] { run(); }) { thread_.detach(); }

  void submit(std::shared_ptr<background_job::state> job) {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

private:
  void run() {
    lower_thread_priority();
    for (;;) {
      std::shared_ptr<background_job::state> job;
      {
        std::unique_lock<std::mutex> guard{mutex_};
        wake_.wait(guard, [this] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      background_job::run(*job);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<background_job::state>> jobs_;
  std::thread thread_;
};

background_job background_job::done(caf::error err) {
  background_job result;
  result.state_ = std::make_shared<state>();
  result.state_->taken = true;
  result.outcome_ = result.state_->outcome.get_future();
  result.state_->outcome.set_value(std::move(err));
  return result;
}

void background_job::run(state& s) {
  if (s.taken.exchange(true))
    return;
  auto err = run_job(std::exchange(s.job, nullptr));
  s.outcome.set_value(std::move(err));
}

caf::error background_job::wait() {
  if (!state_)
    return {};
  auto err = outcome_.get();
  state_.reset();
  return err;
}

caf::error background_job::take_or_wait() {
  if (!state_)
    return {};
  if (!state_->taken.exchange(true)) {
    auto err = run_job(std::exchange(state_->job, nullptr));
    state_.reset();
    return err;
  }
  return wait();
}

background_job write_in_background(std::function<caf::error()> job) {
  // A child forked from a process whose writer ran has the thread's object but not the thread
  // (and maybe its mutex held): it starts a writer of its own, and the old one is let go.
  static writer_thread* writer = nullptr;
  static pid_t owner = 0;
  static std::mutex starting;
  writer_thread* current = nullptr;
  {
    std::lock_guard<std::mutex> guard{starting};
    if (writer == nullptr || owner != ::getpid()) {
      writer = new writer_thread;
      owner = ::getpid();
    }
    current = writer;
  }
  background_job result;
  result.state_ = std::make_shared<background_job::state>();
  result.state_->job = std::move(job);
  result.outcome_ = result.state_->outcome.get_future();
  current->submit(result.state_);
  return result;
}

} // namespace darcy::stores
