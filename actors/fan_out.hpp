// Scatter-gather for actors that front several shards (the master, the candidate sampler): one
// request per target, answers collected, one completion call. A target that times out may be
// asked again (retry_policy). A fan-out can be aborted for a shard known to be gone, so that
// callers do not wait for a timeout.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include <caf/error.hpp>
#include <caf/sec.hpp>

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

/// How a fan-out asks a target again that did not answer in time. Only
/// caf::sec::request_timeout is retried, so the request must be safe to deliver twice:
/// idempotent, or deduplicated by the receiver (a request id that stays the same across
/// attempts).
struct retry_policy {
  /// Attempts per target; 1 asks once.
  uint32_t attempts = 1;
  /// Called before every new attempt (to count them).
  std::function<void()> on_retry;
};

namespace detail {

/// request(xs..., attempt) when `request` takes the attempt, else request(xs...).
template <class Request, class... Ts>
auto send_attempt(Request& request, uint32_t attempt, const Ts&... xs) {
  if constexpr (std::is_invocable_v<Request&, const Ts&..., uint32_t>)
    return request(xs..., attempt);
  else
    return request(xs...);
}

template <class Reply, class Request, class OnReply>
void ask_target(std::shared_ptr<fan_out_state> state, Request request, OnReply on_reply,
                std::shared_ptr<const retry_policy> retry, size_t target, uint32_t attempt) {
  send_attempt(request, attempt, target)
    .then(
      [=](Reply& reply) mutable {
        if (state->finished())
          return;
        on_reply(target, reply);
        state->answered(target);
      },
      [=](caf::error& err) mutable {
        if (state->finished())
          return;
        if (err == caf::sec::request_timeout && attempt + 1 < retry->attempts) {
          if (retry->on_retry)
            retry->on_retry();
          ask_target<Reply>(state, request, on_reply, retry, target, attempt + 1);
          return;
        }
        state->fail(std::move(err));
      });
}

} // namespace detail

/// Sends one request to each shard in `targets`; calls on_reply(shard, reply) for each answer
/// and done(error) once, after the last answer or at the first error (at once for no targets).
/// `request` is called as request(shard) or, when it takes one, request(shard, attempt) with
/// attempt 0, 1, ... so that a retry can wait longer.
template <class Reply, class Request, class OnReply>
std::shared_ptr<fan_out_state> fan_out(const std::vector<size_t>& targets, Request request,
                                       OnReply on_reply, std::function<void(caf::error)> done,
                                       retry_policy retry = {}) {
  auto state = std::make_shared<fan_out_state>(targets, std::move(done));
  if (targets.empty()) {
    state->fail({});
    return state;
  }
  auto policy = std::make_shared<const retry_policy>(std::move(retry));
  for (auto s : targets)
    detail::ask_target<Reply>(state, request, on_reply, policy, s, 0);
  return state;
}

} // namespace darcy::actors
