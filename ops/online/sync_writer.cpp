#include "ops/online/sync_writer.hpp"

#include <filesystem>
#include <thread>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/export/export.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::ops::online {

using steady = std::chrono::steady_clock;

sync_writer::sync_writer(sync_policy policy) : policy_(std::move(policy)) {
  // The shards of a cluster's service write and read the folder at this path on their hosts.
  if (!policy_.dir.empty())
    policy_.dir = std::filesystem::absolute(policy_.dir).string();
  last_sync_ = steady::now() - policy_.every;
  last_dense_sync_ = steady::now() - policy_.dense_every;
}

bool sync_writer::due() const {
  return steady::now() - last_sync_ >= policy_.every;
}

caf::expected<sync_report> sync_writer::write(session& s, estimator::estimator& e, int64_t step,
                                              bool last) {
  sync_report r;
  last_sync_ = steady::now();
  if (auto err = ops::save(s, policy_.dir, {step, "", {}}, policy_.full_every))
    return err;
  auto synced = stores::checkpoint_dir{policy_.dir}.read_manifest();
  if (!synced)
    return std::move(synced.error());
  r.checkpoint = synced->checkpoint;
  r.full = synced->base.empty();
  for (auto& entry : synced->embeddings)
    for (auto& file : entry.files)
      r.bytes += file.bytes;
  if (last || steady::now() - last_dense_sync_ >= policy_.dense_every) {
    last_dense_sync_ = steady::now();
    if (auto fetched = e.fetch_server_state(); !fetched)
      return std::move(fetched.error());
    if (auto err = estimator::write_dense_sync(e, policy_.dir, step))
      return err;
    r.dense = true;
  }
  if (policy_.push.url.empty())
    return r;
  r.push_sent = steady::now();
  r.push = push_sync(policy_.push, policy_.dir, cursor_);
  for (int again = 0; last && r.push.status != 200 && again < 3; ++again) {
    std::this_thread::sleep_for(policy_.every);
    auto retry = push_sync(policy_.push, policy_.dir, cursor_);
    retry.bytes += r.push.bytes;
    r.push = retry;
  }
  r.push_answered = steady::now();
  return r;
}

push_result sync_writer::push_current() {
  if (policy_.push.url.empty())
    return {};
  return push_sync(policy_.push, policy_.dir, cursor_);
}

caf::expected<std::optional<int64_t>> sync_writer::resume(session& s) {
  auto last = stores::checkpoint_dir{policy_.dir}.read_manifest();
  if (!last)
    return is(last.error(), errc::not_found) ? caf::expected<std::optional<int64_t>>{std::nullopt}
                                             : std::move(last.error());
  auto restored = ops::restore(s, policy_.dir);
  if (!restored)
    return std::move(restored.error());
  // The restore may have gone back to an older sync, whose parts all reached this host.
  auto held = stores::checkpoint_dir{policy_.dir}.read_manifest();
  if (!held)
    return std::move(held.error());
  auto step = restored->state.step;
  if (auto err =
        ops::save_restored(s, policy_.dir, {step, "", {}}, policy_.full_every, held->checkpoint))
    return err;
  push_current();
  return std::optional<int64_t>{step};
}

} // namespace darcy::ops::online
