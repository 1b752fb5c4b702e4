#include "ops/follow_chain.hpp"

#include <algorithm>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"

namespace darcy::ops {

caf::expected<followed_chain> follow_chain(
  session& s, const std::string& dir, std::string& held,
  std::optional<std::chrono::milliseconds> restore_patience) {
  stores::checkpoint_dir root{dir};
  auto head = root.read_manifest();
  if (!head)
    return std::move(head.error());
  followed_chain out{head->checkpoint, head->step, 0, false};
  if (head->checkpoint == held)
    return out;
  auto chain = stores::read_chain(root, *head);
  if (!chain)
    return std::move(chain.error());
  auto position = [&](const std::vector<checkpoint_manifest>& c) {
    return std::find_if(c.begin(), c.end(), [&](const checkpoint_manifest& m) {
      return !held.empty() && m.checkpoint == held;
    });
  };
  // Applies links [from, to) one by one; false when the service no longer holds `held` (a
  // sync that failed half way left its shards at two times), and only a restore will do.
  auto apply = [&](auto from, auto to) -> caf::expected<bool> {
    for (auto link = from; link != to; ++link) {
      if (auto err = sync(s, dir, *link))
        return is(err, errc::invalid_argument) ? caf::expected<bool>{false}
                                               : caf::expected<bool>{std::move(err)};
      held = link->checkpoint;
      ++out.applied;
    }
    return true;
  };
  auto at = position(*chain);
  bool synced = at != chain->end();
  if (!synced && !held.empty() && !chain->front().same_as.empty()) {
    // A new chain that starts at the state of the previous chain's last delta: catch up to that
    // delta, and the rows are the new chain's start.
    auto last = root.read_manifest_of(chain->front().same_as);
    auto previous = last ? stores::read_chain(root, *last)
                         : caf::expected<std::vector<checkpoint_manifest>>{last.error()};
    if (previous)
      if (auto was = position(*previous); was != previous->end()) {
        auto caught_up = apply(std::next(was), previous->end());
        if (!caught_up)
          return std::move(caught_up.error());
        if (*caught_up) {
          held = chain->front().checkpoint;
          at = chain->begin();
          synced = true;
        }
      }
  }
  if (synced) {
    auto applied = apply(std::next(at), chain->end());
    if (!applied)
      return std::move(applied.error());
    synced = *applied;
  }
  if (!synced) {
    auto restored = restore(s, dir, restore_patience);
    if (!restored)
      return std::move(restored.error());
    out.applied = chain->size();
    out.restored = true;
  }
  held = head->checkpoint;
  return out;
}

} // namespace darcy::ops
