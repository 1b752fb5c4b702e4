// The factor shard of distributed WALS: holds the rows of U and V it owns (id % count == index)
// in a current and a pending buffer per side, so that a phase's writes never change what the
// phase reads. Behaviour only: the initial rows and the Gramian come from compute/wals_math,
// checkpoint parts from stores/wals_checkpoint. Interface and contract: factor_shard_actor
// (messages/wals/wals_interfaces.hpp).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "messages/wals/wals_interfaces.hpp"

namespace darcy::actors {

struct factor_shard_state {
  struct side_rows {
    /// Rows owned: ids index, index + count, ...; local row i is id index + i * count.
    uint64_t rows = 0;
    /// Shared with readers of view; never written while current. Null until the side's first
    /// use, which draws its initial rows (not the spawn: it must answer within seconds).
    std::shared_ptr<std::vector<float>> current;
    /// Written during a phase, null between the side's phases. A buffer that a reader still
    /// holds is never reused as pending.
    std::shared_ptr<std::vector<float>> pending;
    /// The epoch whose writes go to `pending`; 0 when none is open.
    uint64_t open_epoch = 0;
    /// Commits and loads of the side so far, plus one: views of equal versions hold equal rows.
    uint64_t version = 1;
  };
  wals_shard_config config;
  std::array<side_rows, 2> sides;
  static inline const char* name = "darcy.factor_shard";
};

factor_shard_actor::behavior_type factor_shard(
  factor_shard_actor::stateful_pointer<factor_shard_state> self, wals_shard_config config);

} // namespace darcy::actors
