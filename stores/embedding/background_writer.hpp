// The thread that writes the LevelDB tier's evicted rows while the trainer goes on: one for the
// process, shared by every database, running the jobs it is given one at a time in the order
// they came. A store hands it a batch and waits for that batch before it hands it the next.
#pragma once

#include <functional>
#include <future>

#include <caf/error.hpp>

namespace darcy::stores {

/// Runs `job` on the shared writer thread after every job submitted before it; the future holds
/// what the job returned. Never freed: the thread outlives every store, and a store must wait
/// for its own jobs before it is destroyed. A process forked from one whose writer ran gets a
/// writer thread of its own at its first job.
std::future<caf::error> write_in_background(std::function<caf::error()> job);

} // namespace darcy::stores
