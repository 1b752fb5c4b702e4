// A deterministic embedding workload for checkpoint crash tests: the same calls produce the
// same service state in any process, so a test can replay a writer that it SIGKILLed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>

#include "messages/embedding/embedding_interfaces.hpp"

namespace darcy::test {

inline constexpr const char* drill_table = "drill";
inline constexpr uint32_t drill_dim = 16;

/// A master over `shards` in-process shards.
embedding_master_actor start_drill_service(caf::actor_system& sys, size_t shards);

/// Creates the table and looks up `rows` keys, so that the checkpoint has real size.
caf::error drill_setup(caf::actor_system& sys, const embedding_master_actor& master, int rows);

/// Training step `step` (1, 2, ...): a fixed batch of updates.
caf::error drill_step(caf::actor_system& sys, const embedding_master_actor& master, int step);

/// Rows of a fixed probe set of keys.
caf::expected<std::vector<float>> drill_probe(caf::actor_system& sys,
                                              const embedding_master_actor& master);

} // namespace darcy::test
