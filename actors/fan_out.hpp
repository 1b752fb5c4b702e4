// Scatter-gather for actors that front several shards (the master, the candidate sampler): one
// request per target, answers collected, one completion call. A fan-out can be aborted for a
// shard known to be gone, so that callers do not wait for a timeout.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <caf/error.hpp>

namespace darcy::actors {

/// What a running fan-out still waits for.
class fan_out_state {
public:
  fan_out_state(std::vector<size_t> targets, std::function<void(caf::error)> done)
    : waiting_(std::move(targets)), done_(std::move(done)) {}

  bool finished() const { return finished_; }

  /// Records `shard`'s answer; completes the fan-out after the last one.
  void answered(size_t shard) {
    if (finished_)
      return;
    std::erase(waiting_, shard);
    if (waiting_.empty())
      finish({});
  }

  /// Completes the fan-out with `err` unless it already finished.
  void fail(caf::error err) {
    if (!finished_)
      finish(std::move(err));
  }

  /// Fails the fan-out if it still waits for `shard`.
  void abort_if_waiting(size_t shard, const caf::error& err) {
    if (!finished_ && std::find(waiting_.begin(), waiting_.end(), shard) != waiting_.end())
      finish(err);
  }

private:
  void finish(caf::error err) {
    finished_ = true;
    done_(std::move(err));
  }

  std::vector<size_t> waiting_;
  std::function<void(caf::error)> done_;
  bool finished_ = false;
};

/// The targets 0 .. n - 1: every shard.
inline std::vector<size_t> all_targets(size_t n) {
  std::vector<size_t> xs(n);
  for (size_t i = 0; i < n; ++i)
    xs[i] = i;
  return xs;
}

/// Sends one request to each shard in `targets`; calls on_reply(shard, reply) for each answer
/// and done(error) once, after the last answer or at the first error (at once for no targets).
template <class Reply, class Request, class OnReply>
std::shared_ptr<fan_out_state> fan_out(const std::vector<size_t>& targets, Request request,
                                       OnReply on_reply, std::function<void(caf::error)> done) {
  auto state = std::make_shared<fan_out_state>(targets, std::move(done));
  if (targets.empty()) {
    state->fail({});
    return state;
  }
  for (auto s : targets)
    request(s).then(
      [=](Reply& reply) mutable {
        if (state->finished())
          return;
        on_reply(s, reply);
        state->answered(s);
      },
      [=](caf::error& err) { state->fail(std::move(err)); });
  return state;
}

} // namespace darcy::actors
