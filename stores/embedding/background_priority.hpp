// The scheduling priority of the LevelDB tier's background threads (its writer and LevelDB's
// compaction thread): below the trainer's, so that their work runs on the cycles the trainer's
// threads leave idle instead of delaying them, and still runs whenever a trainer waits for it.
#pragma once

namespace darcy::stores {

/// The nice value a background thread of the tier takes (the trainer's threads keep theirs).
inline constexpr int background_nice = 19;

/// Lowers the calling thread's priority to `nice` (background_nice unless given: a shard's
/// sync reads take 10). Best effort: a failure (a seccomp profile that forbids it) leaves the
/// thread as it was.
void lower_thread_priority(int nice = background_nice);

} // namespace darcy::stores
