#include "actors/embedding/master_queue.hpp"

#include <algorithm>
#include <numeric>

#include "actors/embedding/master_recovery.hpp"

namespace darcy::actors::master {

retry_policy retries(embedding_master_pointer self) {
  return {std::max<uint32_t>(self->state.options.attempts, 1), [self] { ++self->state.retries; }};
}

retry_policy file_retries(embedding_master_pointer self) {
  auto r = retries(self);
  r.attempts = std::max(r.attempts, self->state.options.file_attempts);
  return r;
}

uint64_t new_request_id(embedding_master_pointer self) {
  auto id = self->state.next_request_id++;
  return id == 0 ? self->state.next_request_id++ : id;
}

void start_queued(embedding_master_pointer self) {
  auto& st = self->state;
  while (!st.diverged.empty() && !st.queued.empty()) {
    auto next = std::move(st.queued.front());
    st.queued.pop_front();
    next.refuse(diverged_error(st));
  }
  while (!st.exclusive && st.down.empty() && st.in_flight < st.options.max_in_flight &&
         !st.queued.empty()) {
    auto next = std::move(st.queued.front());
    st.queued.pop_front();
    ++st.in_flight;
    next.run();
  }
}

void finished(embedding_master_pointer self) {
  auto& st = self->state;
  --st.in_flight;
  if (st.exclusive && st.in_flight == 0 && st.on_drained) {
    auto work = std::move(st.on_drained);
    st.on_drained = nullptr;
    work();
    return;
  }
  start_queued(self);
}

void run_exclusive(embedding_master_pointer self, std::function<void()> work) {
  auto& st = self->state;
  st.exclusive = true;
  if (st.in_flight == 0)
    work();
  else
    st.on_drained = std::move(work);
}

caf::error begin_exclusive(embedding_master_pointer self, std::function<void()> work) {
  auto& st = self->state;
  if (!st.exclusive && st.down.empty()) {
    run_exclusive(self, std::move(work));
    return {};
  }
  if (st.exclusive_waiting.size() >= st.options.max_queued)
    return make_error(errc::overloaded, std::to_string(st.exclusive_waiting.size()) +
                                          " checkpoint saves and restores waiting");
  st.exclusive_waiting.push_back(std::move(work));
  return {};
}

void end_exclusive(embedding_master_pointer self) {
  auto& st = self->state;
  st.exclusive = false;
  if (!st.to_recover.empty()) {
    recover_pending(self);
  } else if (st.down.empty() && !st.exclusive_waiting.empty()) {
    auto work = std::move(st.exclusive_waiting.front());
    st.exclusive_waiting.pop_front();
    run_exclusive(self, std::move(work));
  } else {
    start_queued(self);
  }
}

void track(embedding_master_pointer self, std::shared_ptr<fan_out_state> state) {
  auto& list = self->state.fan_outs;
  std::erase_if(list, [](const std::weak_ptr<fan_out_state>& w) {
    auto s = w.lock();
    return !s || s->finished();
  });
  if (!state->finished())
    list.push_back(state);
}

std::vector<size_t> all_shards(embedding_master_pointer self) {
  std::vector<size_t> result(self->state.options.shards.size());
  std::iota(result.begin(), result.end(), 0);
  return result;
}

} // namespace darcy::actors::master
