#include "compute/initializer.hpp"

#include <cmath>

#include "compute/hash.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {

namespace {

// A splitmix64 stream: fast, and fixed by this file rather than by the standard library.
struct stream {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1): never 0, so log() below is finite.
  double unit() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  double gaussian() {
    constexpr double two_pi = 6.283185307179586;
    return std::sqrt(-2.0 * std::log(unit())) * std::cos(two_pi * unit());
  }
};

} // namespace

plain_error validate(const initializer_config& cfg) {
  auto finite = std::isfinite(cfg.low) && std::isfinite(cfg.high) && std::isfinite(cfg.mean) &&
                std::isfinite(cfg.stddev);
  if (!finite)
    return plain_error{errc::invalid_config, "initializer values must be finite"};
  if (cfg.kind == init_kind::uniform && !(cfg.low < cfg.high))
    return plain_error{errc::invalid_config, "uniform initializer needs low < high"};
  if ((cfg.kind == init_kind::normal || cfg.kind == init_kind::truncated_normal) &&
      !(cfg.stddev > 0))
    return plain_error{errc::invalid_config, "normal initializer needs stddev > 0"};
  return {};
}

void initialize_row(const initializer_config& cfg, uint64_t key_hash, std::span<float> row) {
  stream rng{mix64(cfg.seed, key_hash)};
  switch (cfg.kind) {
    case init_kind::zeros:
      for (auto& x : row)
        x = 0;
      break;
    case init_kind::uniform:
      for (auto& x : row)
        x = static_cast<float>(cfg.low + (cfg.high - cfg.low) * rng.unit());
      break;
    case init_kind::normal:
      for (auto& x : row)
        x = static_cast<float>(cfg.mean + cfg.stddev * rng.gaussian());
      break;
    case init_kind::truncated_normal:
      for (auto& x : row) {
        double z;
        do
          z = rng.gaussian();
        while (std::abs(z) > 2.0);
        x = static_cast<float>(cfg.mean + cfg.stddev * z);
      }
      break;
  }
}

} // namespace darcy::compute
