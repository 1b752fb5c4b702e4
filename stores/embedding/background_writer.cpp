#include "stores/embedding/background_writer.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <unistd.h>

namespace darcy::stores {

namespace {

class writer_thread {
public:
  writer_thread() : thread_([this] { run(); }) { thread_.detach(); }

  std::future<caf::error> submit(std::function<caf::error()> job) {
    std::packaged_task<caf::error()> task{std::move(job)};
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> guard{mutex_};
      jobs_.push_back(std::move(task));
    }
    wake_.notify_one();
    return result;
  }

private:
  void run() {
    for (;;) {
      std::packaged_task<caf::error()> task;
      {
        std::unique_lock<std::mutex> guard{mutex_};
        wake_.wait(guard, [this] { return !jobs_.empty(); });
        task = std::move(jobs_.front());
        jobs_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<caf::error()>> jobs_;
  std::thread thread_;
};

} // namespace

std::future<caf::error> write_in_background(std::function<caf::error()> job) {
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
  return current->submit(std::move(job));
}

} // namespace darcy::stores
