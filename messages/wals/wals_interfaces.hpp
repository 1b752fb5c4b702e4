// The typed interfaces of distributed WALS: factor shards holding U and V, workers solving
// blocks, and the chief holding the run tokens. See actors/wals_*.hpp for the behaviour.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/checkpoint.hpp"
#include "messages/cluster/membership.hpp"
#include "messages/shared_floats.hpp"
#include "messages/wals/wals_values.hpp"

namespace darcy {

/// A side's rows as a shard holds them: `version` counts the side's commits and loads in the
/// shard's lifetime; `rows` is all of `current` (local row i is id index + i * count), or empty
/// when the asker already holds this version.
struct factor_snapshot {
  uint64_t version = 0;
  shared_floats rows;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, factor_snapshot& x) {
  return f(caf::meta::type_name("factor_snapshot"), x.version, x.rows);
}

/// Factor rows of dim `dim` in one view(side, known, first, count) from another process: 16 MiB
/// of them, so that a message crosses a link in milliseconds.
constexpr uint64_t factor_view_chunk_rows(uint32_t dim) {
  constexpr uint64_t chunk_bytes = uint64_t{16} << 20;
  return dim == 0 ? 1 : std::max<uint64_t>(1, chunk_bytes / (uint64_t{dim} * sizeof(float)));
}

/// Holds the rows of U and V whose id % count == index, in two buffers per side: `current`
/// (read by view, gram and save) and `pending` (written during a phase).
/// - begin(epoch, side) opens the epoch; commit(epoch, side) makes pending current. Every row
///   of the side must be written between them (the chief commits only after every block did).
/// - write(epoch, side, first, rows, values) writes ids first .. first + rows - 1 of the side
///   that the shard owns. `values` holds either all `rows` rows (a block that workers in the
///   shards' process share with every shard) or only the owned ones, in id order (what a
///   remote worker sends). It is refused (errc::invalid_argument) unless its epoch is open or
///   when the rows lie past the side, fails with errc::dimension_mismatch for any other size,
///   and changes nothing when an owned row is not finite (errc::non_finite).
/// - view(side, known) answers a factor_snapshot of all of `current` without a copy, with no
///   rows when `known` is the current version: for readers in the shard's process. The buffer
///   is never written while anyone holds it.
/// - view(side, known, first, count) answers a copy of local rows first .. first + count - 1 of
///   `current` (fewer past its end), with no rows when `known` is the current version: how
///   other processes read a side, in messages small enough not to hold up what else crosses
///   the link (heartbeats).
/// - save(root, id) writes both sides into checkpoint `id` under `root` and answers the parts
///   (stores/wals_checkpoint); load(root, manifest) replaces both sides with the manifest's
///   parts for this shard, or changes nothing and fails with errc::corrupt_file.
using factor_shard_actor = caf::typed_actor<
  caf::replies_to<view_atom, wals_side, uint64_t>::with<factor_snapshot>,
  caf::replies_to<view_atom, wals_side, uint64_t, uint64_t, uint64_t>::with<factor_snapshot>,
  caf::replies_to<write_atom, uint64_t, wals_side, uint64_t, uint64_t,
                  shared_floats>::with<ok_atom>,
  caf::replies_to<begin_atom, uint64_t, wals_side>::with<ok_atom>,
  caf::replies_to<commit_atom, uint64_t, wals_side>::with<ok_atom>,
  caf::replies_to<gram_atom, wals_side>::with<std::vector<float>>,
  caf::replies_to<save_atom, std::string, std::string>::with<std::vector<file_info>>,
  caf::replies_to<load_atom, std::string, checkpoint_manifest>::with<ok_atom>>;

/// A worker idles until a chief announces itself, then reports ready and solves each token it
/// is handed, committing it to the chief that issued it.
using wals_worker_actor = caf::typed_actor<caf::reacts_to<chief_atom, caf::actor>,
                                           caf::reacts_to<token_atom, wals_token, caf::actor>>;

/// The chief. ready(last, worker): the worker is idle, and `last` is the token it received
/// last; a ready from a worker the chief gave a later token is stale and ignored.
/// commit(c, worker): the worker finished the
/// token and is idle again; a commit for a token that is no longer outstanding is ignored.
/// events: the event log so far. Its listener receives wals_progress after every phase.
/// cluster_event (from the registry): the workers of a member declared down are fenced at
/// once: their tokens are re-issued and nothing more is taken from them.
using wals_chief_actor = caf::typed_actor<
  caf::reacts_to<cluster_event>, caf::reacts_to<ready_atom, wals_token_id, caf::actor>,
  caf::reacts_to<commit_atom, wals_commit, caf::actor>,
  caf::replies_to<events_atom>::with<std::vector<wals_event>>, caf::reacts_to<tick_atom>>;

struct wals_chief_config {
  wals_params params;
  uint64_t rows = 0;
  uint64_t cols = 0;
  uint32_t row_blocks = 1;
  uint32_t col_blocks = 1;
  uint32_t sweeps = 10;
  /// Consistent checkpoints go here after every sweep; a chief that finds one of the same
  /// run_id restores from it. Empty: no checkpoints.
  std::string checkpoint_dir;
  uint64_t run_id = 0;
  /// A token not committed within this time is re-issued.
  int64_t token_timeout_ms = 60000;
  /// A block issued this many times without a commit (timed out, abandoned, or its worker went
  /// down) fails the run: the listener gets a wals_progress whose `failure` says why.
  uint32_t max_attempts = 5;
  wals_faults faults;
  std::vector<wals_worker_actor> workers;
  std::vector<factor_shard_actor> shards;
  /// Receives wals_progress (may be invalid).
  caf::actor listener;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_chief_config& x) {
  return f(caf::meta::type_name("wals_chief_config"), x.params, x.rows, x.cols, x.row_blocks,
           x.col_blocks, x.sweeps, x.checkpoint_dir, x.run_id, x.token_timeout_ms, x.max_attempts,
           x.faults, x.workers, x.shards, x.listener);
}

} // namespace darcy
