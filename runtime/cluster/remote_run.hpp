// Calling a sub-model that may live on another node, with a request's context: the deadline
// becomes the request's timeout (a passed deadline sends nothing), and every failure comes back
// as a darcy error that says what went wrong, so that a caller can decide per failure (retry,
// answer partially, give up). remote_run_again also asks again, before the deadline, a target
// that has not answered. A serving root calls its shards through it; any model can.
//
//   runtime::remote_run<shard_hits>(self, shard, ctx, "shard 2",
//     [=](shard_hits& hits) { ... }, [=](const caf::error& err) { ... },
//     topk_atom::value, query);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>
#include "messages/cluster/request_context.hpp"
#include "runtime/ask.hpp"

namespace darcy::runtime {

/// How long a request without a deadline may take.
inline constexpr std::chrono::seconds remote_run_default_timeout{30};

/// The darcy error for a failed call of `what`: CAF's request timeout becomes
/// errc::deadline_exceeded; a receiver that is gone or unreachable becomes errc::unavailable;
/// darcy errors pass unchanged; anything else becomes errc::unavailable with CAF's text.
caf::error remote_failure(const caf::error& err, const std::string& what);

namespace detail {

/// One attempt of remote_run_again: attempt n (0, 1, ...) waits (n + 1) * attempt, or what
/// is left before `until`; a timeout with time left asks again.
template <class Reply, class Self, class Handle, class OnReply, class OnError, class Args,
          class OnResend>
void remote_attempt(Self* self, Handle target, std::string what,
                    std::chrono::steady_clock::time_point until, std::chrono::milliseconds attempt,
                    uint32_t n, OnReply on_reply, OnError on_error,
                    std::shared_ptr<const Args> args, OnResend on_resend) {
  using namespace std::chrono;
  auto wait =
    attempt.count() > 0
      ? attempt_wait(attempt * (n + 1), until)
      : std::max(duration_cast<milliseconds>(until - steady_clock::now()), milliseconds{1});
  std::apply(
    [&](const auto&... xs) {
      self->request(target, wait, xs...)
        .then([on_reply](Reply& reply) mutable { on_reply(reply); },
              [=](caf::error& err) mutable {
                if (err == caf::sec::request_timeout && attempt.count() > 0 &&
                    steady_clock::now() + milliseconds{1} < until) {
                  on_resend();
                  remote_attempt<Reply>(self, target, what, until, attempt, n + 1, on_reply,
                                        on_error, args, on_resend);
                  return;
                }
                on_error(remote_failure(err, what));
              });
    },
    *args);
}

} // namespace detail

/// remote_run for a request that is safe to deliver twice (a read, or one the receiver
/// deduplicates): without an answer after `attempt`, it is sent again, then after 2 · attempt,
/// 3 · attempt..., until the deadline (or remote_run_default_timeout) passes. Only the newest
/// attempt's answer is taken: CAF drops an answer that arrives after its request timed out, so
/// `attempt` must exceed the target's usual round trip. on_resend() runs before each new
/// attempt. `attempt` 0 sends once.
template <class Reply, class Self, class Handle, class OnReply, class OnError, class OnResend,
          class... Ts>
void remote_run_again(Self* self, const Handle& target, const request_context& ctx,
                      const std::string& what, std::chrono::milliseconds attempt,
                      OnResend on_resend, OnReply on_reply, OnError on_error, Ts&&... xs) {
  auto left = time_left(ctx, remote_run_default_timeout);
  if (left.count() == 0) {
    on_error(remote_failure(caf::sec::request_timeout, what));
    return;
  }
  using args_type = std::tuple<std::decay_t<Ts>...>;
  detail::remote_attempt<Reply>(self, target, what, std::chrono::steady_clock::now() + left,
                                attempt, 0, std::move(on_reply), std::move(on_error),
                                std::make_shared<const args_type>(std::forward<Ts>(xs)...),
                                std::move(on_resend));
}

/// Sends (xs...) to `target` from the event-based actor `self` and calls on_reply(Reply&) or
/// on_error(const caf::error&) exactly once. With a passed deadline, on_error runs at once with
/// errc::deadline_exceeded and nothing is sent.
template <class Reply, class Self, class Handle, class OnReply, class OnError, class... Ts>
void remote_run(Self* self, const Handle& target, const request_context& ctx,
                const std::string& what, OnReply on_reply, OnError on_error, Ts&&... xs) {
  remote_run_again<Reply>(
    self, target, ctx, what, std::chrono::milliseconds{0}, [] {}, std::move(on_reply),
    std::move(on_error), std::forward<Ts>(xs)...);
}

/// The blocking form, for program edges and tests: waits for the reply of `target`.
template <class Reply, class Handle, class... Ts>
caf::expected<Reply> remote_run(caf::actor_system& sys, const Handle& target,
                                const request_context& ctx, const std::string& what, Ts&&... xs) {
  auto left = time_left(ctx, remote_run_default_timeout);
  if (left.count() == 0)
    return remote_failure(caf::sec::request_timeout, what);
  auto result = ask<Reply>(sys, target, left, std::forward<Ts>(xs)...);
  if (!result)
    return remote_failure(result.error(), what);
  return result;
}

} // namespace darcy::runtime
