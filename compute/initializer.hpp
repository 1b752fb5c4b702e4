// Initial embedding rows. A row depends only on (seed, key hash), so the same key gets the same
// initial vector on any shard, in any process, and after any restart.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <caf/error.hpp>

namespace darcy::compute {

enum class init_kind : uint8_t { zeros = 0, uniform = 1, normal = 2, truncated_normal = 3 };

std::string to_string(init_kind x);

struct initializer_config {
  init_kind kind = init_kind::uniform;
  /// uniform: [low, high); normal and truncated_normal: mean and stddev.
  float low = -0.05f;
  float high = 0.05f;
  float mean = 0.0f;
  float stddev = 0.05f;
  uint64_t seed = 1;
};

/// Fails with errc::invalid_config: low >= high, stddev <= 0, or a non-finite value.
caf::error validate(const initializer_config& cfg);

/// Fills `row` with the initial vector of the key whose hash is `key_hash`. Truncated normal
/// redraws values more than two standard deviations from the mean, as TensorFlow does.
void initialize_row(const initializer_config& cfg, uint64_t key_hash, std::span<float> row);

} // namespace darcy::compute
