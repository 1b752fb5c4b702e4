// Calling a sub-model that may live on another node, with a request's context: the deadline
// becomes the request's timeout (a passed deadline sends nothing), and every failure comes back
// as a darcy error that says what went wrong, so that a caller can decide per failure (retry,
// answer partially, give up). A serving root calls its shards through it; any model can.
//
//   runtime::remote_run<shard_hits>(self, shard, ctx, "shard 2",
//     [=](shard_hits& hits) { ... }, [=](const caf::error& err) { ... },
//     topk_atom::value, query);
#pragma once

#include <chrono>
#include <string>
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

/// Sends (xs...) to `target` from the event-based actor `self` and calls on_reply(Reply&) or
/// on_error(const caf::error&) exactly once. With a passed deadline, on_error runs at once with
/// errc::deadline_exceeded and nothing is sent.
template <class Reply, class Self, class Handle, class OnReply, class OnError, class... Ts>
void remote_run(Self* self, const Handle& target, const request_context& ctx,
                const std::string& what, OnReply on_reply, OnError on_error, Ts&&... xs) {
  auto left = time_left(ctx, remote_run_default_timeout);
  if (left.count() == 0) {
    on_error(remote_failure(caf::sec::request_timeout, what));
    return;
  }
  self->request(target, left, std::forward<Ts>(xs)...)
    .then([on_reply](Reply& reply) mutable { on_reply(reply); },
          [on_error, what](caf::error& err) mutable { on_error(remote_failure(err, what)); });
}

/// The blocking form, for program edges and tests: waits for the reply of `target`.
template <class Reply, class Handle, class... Ts>
caf::expected<Reply> remote_run(caf::actor_system& sys, const Handle& target,
                                const request_context& ctx, const std::string& what,
                                Ts&&... xs) {
  auto left = time_left(ctx, remote_run_default_timeout);
  if (left.count() == 0)
    return remote_failure(caf::sec::request_timeout, what);
  auto result = ask<Reply>(sys, target, left, std::forward<Ts>(xs)...);
  if (!result)
    return remote_failure(result.error(), what);
  return result;
}

} // namespace darcy::runtime
