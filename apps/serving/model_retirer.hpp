// Where serving lets go of models it replaced: a model's last reference dropped on a thread of
// its own, so that the seconds its teardown may take (stopping its service's actors, closing
// its connections to the cluster) never hold a lock that predictions wait for, nor a sync.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace darcy::serving {

class model_retirer {
public:
  model_retirer() = default;
  model_retirer(const model_retirer&) = delete;
  model_retirer& operator=(const model_retirer&) = delete;

  /// Waits for the models handed over to be let go.
  ~model_retirer();

  /// Drops `held` on the retirer's thread (a no-op for an empty pointer); the object goes
  /// there unless other references remain. Must not be called from that thread.
  void retire(std::shared_ptr<void> held);

  /// How many references were handed over and dropped so far.
  size_t retired() const;

private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<void>> queue_;
  size_t retired_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace darcy::serving
