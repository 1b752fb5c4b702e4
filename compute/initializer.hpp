// Initial embedding rows. A row depends only on (seed, key hash), so the same key gets the same
// initial vector on any shard, in any process, and after any restart.
#pragma once

#include <cstdint>
#include <span>

#include "messages/embedding/embedding_config.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {

/// Fails with errc::invalid_config: low >= high, stddev <= 0, or a non-finite value.
plain_error validate(const initializer_config& cfg);

/// Fills `row` with the initial vector of the key whose hash is `key_hash`. Truncated normal
/// redraws values more than two standard deviations from the mean, as TensorFlow does.
void initialize_row(const initializer_config& cfg, uint64_t key_hash, std::span<float> row);

} // namespace darcy::compute
