// Scatter-gather for actors that front several shards (the master, the candidate sampler): one
// request per target, answers collected, one completion call.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <caf/error.hpp>

namespace darcy::actors {

/// Sends one request to each shard in `targets`; calls on_reply(shard, reply) for each answer
/// and done(error) once, after the last answer or at the first error (at once for no targets).
template <class Reply, class Request, class OnReply>
void fan_out(const std::vector<size_t>& targets, Request request, OnReply on_reply,
             std::function<void(caf::error)> done) {
  if (targets.empty()) {
    done({});
    return;
  }
  auto pending = std::make_shared<size_t>(targets.size());
  auto failed = std::make_shared<bool>(false);
  for (auto s : targets)
    request(s).then(
      [=](Reply& reply) mutable {
        if (*failed)
          return;
        on_reply(s, reply);
        if (--*pending == 0)
          done({});
      },
      [=](caf::error& err) {
        if (*failed)
          return;
        *failed = true;
        done(std::move(err));
      });
}

} // namespace darcy::actors
