// The embedding master's request queue and its way of asking shards: at most max_in_flight
// fan-outs run, up to max_queued more wait, and exclusive work (a save, a restore, a shard's
// refill) holds new requests back until it ends. Internal to actors/embedding/.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "actors/embedding/embedding_master.hpp"
#include "messages/error.hpp"

namespace darcy::actors::master {

/// Shard `s` as the master knows it now (a recovered shard is a new actor).
inline const embedding_shard_actor& shard(embedding_master_pointer self, size_t s) {
  return self->state.options.shards[s];
}

/// Sends xs to shard s as attempt `attempt` (0 first): its timeout doubles with each attempt,
/// up to shard_timeout.
template <class... Ts>
auto ask_shard(embedding_master_pointer self, size_t s, uint32_t attempt, Ts&&... xs) {
  auto& opts = self->state.options;
  auto timeout = opts.attempt_timeout * (int64_t{1} << std::min<uint32_t>(attempt, 20));
  auto wait = opts.shards_may_lose_messages ? caf::duration{std::min(timeout, opts.shard_timeout)}
                                            : caf::duration{caf::infinite};
  return self->request(shard(self, s), wait, std::forward<Ts>(xs)...);
}

/// Retries of a shard request: options.attempts in all, each counted in state.retries.
retry_policy retries(embedding_master_pointer self);

/// Retries of a shard's part of a save, restore or sync: options.file_attempts in all (at
/// least options.attempts), each counted in state.retries.
retry_policy file_retries(embedding_master_pointer self);

/// A fresh id of a shard request that changes state; never 0.
uint64_t new_request_id(embedding_master_pointer self);

/// The error every state-touching request gets while the shards hold rows of different times.
inline caf::error diverged_error(const embedding_master_state& st) {
  return make_error(errc::node_unreachable, st.diverged);
}

/// Runs `work` now if an in-flight slot is free, queues it otherwise, or refuses it.
template <class Promise>
void admit(embedding_master_pointer self, Promise promise, std::function<void()> work) {
  auto& st = self->state;
  if (!st.diverged.empty()) {
    promise.deliver(diverged_error(st));
  } else if (!st.exclusive && st.down.empty() && st.in_flight < st.options.max_in_flight) {
    ++st.in_flight;
    work();
  } else if (st.queued.size() < st.options.max_queued) {
    st.queued.push_back(
      {std::move(work), [promise](caf::error err) mutable { promise.deliver(std::move(err)); }});
  } else {
    promise.deliver(
      make_error(errc::overloaded, std::to_string(st.in_flight) + " requests in flight"));
  }
}

/// Starts queued fan-outs while in-flight slots are free; refuses them all while diverged.
void start_queued(embedding_master_pointer self);

/// Marks one fan-out done; runs the pending exclusive work once nothing is in flight.
void finished(embedding_master_pointer self);

/// Holds back new requests, waits for those in flight, then runs `work`, which must call
/// end_exclusive when it is done. The caller must have checked that nothing exclusive runs.
void run_exclusive(embedding_master_pointer self, std::function<void()> work);

/// Runs a save or restore as exclusive work: now, or when the exclusive work before it has
/// ended and every lost shard is back and refilled. errc::overloaded when max_queued of them
/// already wait.
caf::error begin_exclusive(embedding_master_pointer self, std::function<void()> work);

/// Ends the running exclusive work: lost shards are refilled first (recover_pending), then the
/// next waiting save or restore runs, then the requests queued meanwhile.
void end_exclusive(embedding_master_pointer self);

/// Remembers a running fan-out (and forgets finished ones), so that one waiting on a shard
/// that went down fails at once.
void track(embedding_master_pointer self, std::shared_ptr<fan_out_state> state);

/// 0, 1, ..., shards - 1.
std::vector<size_t> all_shards(embedding_master_pointer self);

/// Delivers `value` on success and the error otherwise.
template <class Promise, class Value>
std::function<void(caf::error)> deliver_with(Promise promise, Value value) {
  return [promise, value](caf::error err) mutable {
    if (err)
      promise.deliver(std::move(err));
    else
      promise.deliver(value());
  };
}

} // namespace darcy::actors::master
