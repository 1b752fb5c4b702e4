#include "apps/serving/model_retirer.hpp"

#include <chrono>

#include "runtime/log.hpp"

namespace darcy::serving {

model_retirer::~model_retirer() {
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void model_retirer::retire(std::shared_ptr<void> held) {
  if (!held)
    return;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    queue_.push_back(std::move(held));
    if (!thread_.joinable())
      thread_ = std::thread{[this] { run(); }};
  }
  wake_.notify_all();
}

size_t model_retirer::retired() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return retired_;
}

void model_retirer::run() {
  std::unique_lock<std::mutex> lock{mutex_};
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return;
    auto held = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    auto start = std::chrono::steady_clock::now();
    held.reset();
    auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (took > 5.0)
      runtime::log_warn("serving: letting go of a replaced model took {:.1f} s", took);
    lock.lock();
    ++retired_;
  }
}

} // namespace darcy::serving
