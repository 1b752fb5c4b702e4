// The WALS chief: holds the run tokens. A phase solves one side, cut into blocks; the chief
// hands one token per block to an idle worker and starts the other side only after every block
// of this one has committed (strict alternation). A token not committed within the timeout, or
// held by a worker that went down (or whose member the registry declared down) or reported
// idle after receiving it, is re-issued. A worker neither idle nor holding a token (a lost token,
// commit or announcement left it waiting) is sent the chief's announcement again at every tick,
// which an idle worker answers by reporting ready. After each sweep (rows then cols) the shards
// save a consistent checkpoint and the chief records its own state; a chief started on a directory
// holding a checkpoint of the same run resumes from it.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "messages/wals/wals_interfaces.hpp"

namespace darcy::actors {

struct wals_chief_state {
  struct outstanding {
    caf::actor worker;
    uint32_t attempt = 0;
    std::chrono::steady_clock::time_point issued;
  };
  wals_chief_config config;
  uint32_t incarnation = 0;
  uint32_t sweep = 0;
  wals_side side = wals_side::rows;
  uint64_t epoch = 0;
  /// The other side's Gramian for this phase.
  std::vector<float> gramian;
  /// The Gramian of U from the cols phase, for the sweep's loss.
  std::vector<float> rows_gramian;
  /// The Gramian of V computed for the sweep's loss, reused by the next rows phase.
  std::vector<float> next_gramian;
  std::vector<bool> committed;
  std::map<uint32_t, uint32_t> attempts;
  std::deque<uint32_t> queue;
  std::map<uint32_t, outstanding> issued;
  std::deque<caf::actor> idle;
  /// Workers that went down, or on members the registry declared down: never given a token
  /// again.
  std::set<caf::actor_addr> fenced;
  double observed_loss = 0;
  uint64_t phase_rows = 0;
  uint64_t phase_entries = 0;
  bool accepting = false;
  /// The sweep of the last consistent checkpoint, -1 when there is none.
  int64_t last_checkpoint = -1;
  bool restored = false;
  bool stalled = false;
  std::vector<double> losses;
  std::vector<wals_event> events;
  static inline const char* name = "darcy.wals_chief";
};

using wals_chief_pointer = wals_chief_actor::stateful_pointer<wals_chief_state>;

/// Spawnable as "darcy.wals_chief". Exits with the error when a shard fails a phase change or a
/// checkpoint (its supervisor restarts it from the last consistent checkpoint).
wals_chief_actor::behavior_type wals_chief(wals_chief_pointer self, wals_chief_config config);

} // namespace darcy::actors
