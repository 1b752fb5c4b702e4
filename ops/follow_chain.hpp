// A serving copy's tables brought to the head of a training run's sync chain (ops::save with
// full_every under a sync directory): delta after delta with ops::sync, or the whole chain
// restored when the copy holds none of it. Estimator and PyTorch exports follow syncs with it.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <caf/expected.hpp>

#include "ops/session.hpp"

namespace darcy::ops {

struct followed_chain {
  /// The head's checkpoint, which the tables now hold, and its step.
  std::string checkpoint;
  int64_t step = 0;
  /// Checkpoints applied (a sync each, or the whole chain on a restore); 0: held already.
  size_t applied = 0;
  bool restored = false;
};

/// Brings `s`'s tables from checkpoint `held` (empty: none of the chain) to the current one
/// under `dir`, and sets `held` to it. A new chain that starts at the state of the previous
/// chain's last delta (checkpoint_manifest::same_as) is caught up with that delta instead of
/// restored. A sync the service refuses (an earlier one failed half way) falls back to a
/// restore, which may take `restore_patience` (none: the session's timeout). On an error,
/// `held` names the last checkpoint applied.
caf::expected<followed_chain> follow_chain(
  session& s, const std::string& dir, std::string& held,
  std::optional<std::chrono::milliseconds> restore_patience = std::nullopt);

} // namespace darcy::ops
