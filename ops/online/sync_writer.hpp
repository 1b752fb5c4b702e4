// The syncs of a training run that serving copies follow: each a consistent checkpoint of the
// session's tables (a delta on the last, a full one every full_every), the dense weights at a
// period of their own, and a push to `darcy serve`. The online trainer and a distributed stream
// job's chief write them the same way.
//
//   sync_writer w{policy};
//   if (w.due()) auto synced = w.write(session, estimator, step, /*last=*/false);
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <caf/expected.hpp>

#include "ops/estimator/estimator.hpp"
#include "ops/online/sync_push.hpp"
#include "ops/session.hpp"

namespace darcy::ops::online {

/// Where a training run writes its syncs, how often, and whom it tells.
struct sync_policy {
  /// The tables' incremental checkpoints (ops::save with full_every) for serving copies to
  /// follow, the dense weights' under dir/dense, and where a rerun resumes: with a chain there,
  /// the run restores the tables of its last sync and the dense weights (with their optimizer's
  /// state) of its last dense sync, and skips the rows trained by then (a stream that cannot
  /// skip is left to its writer). A process that dies so costs the rows since its last sync.
  /// Empty: no sync, no resume.
  std::string dir;
  /// A sync comes after the first window that ends `every` after the last one: a delta of the
  /// rows changed since, and a full checkpoint every full_every deltas.
  std::chrono::milliseconds every{2000};
  uint32_t full_every = 30;
  /// The dense weights go with the first sync at least this long after the last dense one, so at
  /// a lower rate than the rows.
  std::chrono::milliseconds dense_every{10000};
  /// After each sync (needs `dir`). A refused or failed push is reported in its window, and
  /// training goes on.
  push_target push;
};

/// What one sync wrote and pushed.
struct sync_report {
  /// The checkpoint written, whether it is a full one, and the bytes of its parts.
  std::string checkpoint;
  bool full = false;
  uint64_t bytes = 0;
  /// Whether the dense weights went with it.
  bool dense = false;
  /// With a push target: push_sync's result (its retries' bytes included), and when it was
  /// sent and answered.
  push_result push;
  std::chrono::steady_clock::time_point push_sent{};
  std::chrono::steady_clock::time_point push_answered{};
};

class sync_writer {
public:
  /// The first sync is due at once. write() and push_current() need policy.dir.
  explicit sync_writer(sync_policy policy);

  /// Whether policy.every has passed since the last sync.
  bool due() const;

  /// One sync at training step `step`: the tables of `s` (ops::save with full_every), then the
  /// dense weights of `e` (write_dense_sync, fetched from its parameter servers first) when
  /// dense_every has passed or `last`, then the push. The push of a `last` sync is tried again,
  /// every policy.every, up to 3 more times while it is not answered 200, since no later sync
  /// follows it. The save's and the dense sync's errors; a push's failure is only reported.
  caf::expected<sync_report> write(session& s, estimator::estimator& e, int64_t step, bool last);

  /// Pushes the folder's current sync as it stands (after a resume), moving the cursor.
  push_result push_current();

  /// A rerun's resume: restores the tables of the newest sync under policy.dir into `s` (on a
  /// cluster, the newest whose parts all reached this host: ops::restore), starts
  /// a new chain at that state that names it (serving copies that hold that sync go on with the
  /// new chain instead of restoring it whole) and pushes it. Answers that sync's step, nullopt
  /// when the folder holds none; the restore's and the save's errors.
  caf::expected<std::optional<int64_t>> resume(session& s);

  const sync_policy& policy() const { return policy_; }

private:
  sync_policy policy_;
  push_cursor cursor_;
  std::chrono::steady_clock::time_point last_sync_, last_dense_sync_;
};

} // namespace darcy::ops::online
