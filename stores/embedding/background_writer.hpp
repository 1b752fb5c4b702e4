// The thread that writes the LevelDB tier's evicted rows while the trainer goes on: one for the
// process, shared by every database, running the jobs it is given one at a time in the order
// they came, at the tier's background priority. A store hands it a batch and waits for that
// batch before it hands it the next; a store that needs its batch before the writer has begun
// it writes the batch itself.
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <memory>

#include <caf/error.hpp>

namespace darcy::stores {

/// A job given to the writer, and what it returned.
class background_job {
public:
  /// A job that is done, with `err` as its outcome (a write made on the caller's thread).
  static background_job done(caf::error err);

  background_job() = default;

  /// False for a default-constructed job, and once wait or take_or_wait has answered.
  bool valid() const { return state_ != nullptr; }

  /// What the job returned, once the writer has run it.
  caf::error wait();
  /// What the job returned: run on the calling thread when the writer has not begun it (the
  /// writer then passes it over), else waited for. A waiting trainer thus never waits behind
  /// other stores' jobs, nor for a writer its priority keeps off the cores.
  caf::error take_or_wait();

private:
  friend background_job write_in_background(std::function<caf::error()> job);
  friend class writer_thread;
  struct state {
    std::function<caf::error()> job;
    /// Set by whichever of the writer and the waiter runs the job.
    std::atomic<bool> taken = false;
    std::promise<caf::error> outcome;
  };
  /// Runs the job unless taken; its captures are released before its outcome is set.
  static void run(state& s);

  std::shared_ptr<state> state_;
  std::future<caf::error> outcome_;
};

/// Hands `job` to the shared writer thread, which runs it after every job submitted before it.
/// Never freed: the thread outlives every store, and a store must wait for its own jobs before
/// it is destroyed. A process forked from one whose writer ran gets a writer thread of its own
/// at its first job.
background_job write_in_background(std::function<caf::error()> job);

} // namespace darcy::stores
