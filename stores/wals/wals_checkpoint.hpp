// WALS checkpoints on the common mechanism (checkpoint_dir): the factor parts each shard writes,
// and how the chief finds its checkpoint, including one written before the common mechanism
// (format 1: chief.state and sweep-N/ directories), which still restores.
//
//   auto part = stores::write_factor_part(root, id, wals_side::rows, 0, 2, rows);  // a shard
//   auto m = stores::read_wals_checkpoint(root);                                   // the chief
//   auto rows = stores::read_factor_part(root, *m, wals_side::rows, 0, 2);         // a shard
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "messages/checkpoint.hpp"
#include "messages/wals/wals_values.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/matrix_file.hpp"

namespace darcy::stores {

/// "rows-0-of-2.f32": the part of shard `index` of `count` for one side.
std::string factor_part_name(wals_side side, uint32_t index, uint32_t count);

/// Writes one side of one shard into checkpoint `id`.
caf::expected<file_info> write_factor_part(const checkpoint_dir& root, const std::string& id,
                                           wals_side side, uint32_t index, uint32_t count,
                                           const float_matrix& m);

/// Reads one side of one shard from the checkpoint `manifest` names; errc::corrupt_file when
/// the part is missing, damaged, or of another layout.
caf::expected<float_matrix> read_factor_part(const checkpoint_dir& root,
                                             const checkpoint_manifest& manifest, wals_side side,
                                             uint32_t index, uint32_t count);

/// The current WALS checkpoint under `root`: its manifest, or one built from a format-1
/// checkpoint. errc::not_found when there is none; errc::corrupt_file when it is damaged or
/// belongs to another service.
caf::expected<checkpoint_manifest> read_wals_checkpoint(const checkpoint_dir& root);

/// The newest checkpoint of run `run_id` under `root` whose parts are all intact: the one the
/// MANIFEST names, else the newest older one that still holds its own manifest copy, else a
/// format-1 checkpoint. Each checkpoint passed over (damaged, or of another run) is described
/// in `skipped`, newest first. errc::not_found when none is usable.
caf::expected<checkpoint_manifest> find_wals_checkpoint(const checkpoint_dir& root, uint64_t run_id,
                                                        std::vector<std::string>& skipped);

/// How many WALS checkpoints a run keeps, so that a damaged newest one has one to fall back on.
inline constexpr size_t wals_checkpoints_kept = 2;

/// The chief's event log under `root`.
std::string wals_event_log(const checkpoint_dir& root);

} // namespace darcy::stores
