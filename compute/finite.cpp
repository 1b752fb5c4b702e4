#include "compute/finite.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace darcy::compute {

bool all_finite(std::span<const float> values) {
  // A float is NaN or Inf exactly when its exponent bits are all ones. The branch-free OR over
  // whole blocks vectorizes; it checks gradients at memory speed.
  constexpr uint32_t exponent = 0x7f800000u;
  const auto* bits = reinterpret_cast<const uint32_t*>(values.data());
  size_t n = values.size();
  for (size_t begin = 0; begin < n; begin += 4096) {
    auto end = std::min(n, begin + 4096);
    uint32_t bad = 0;
    for (size_t i = begin; i < end; ++i)
      bad |= static_cast<uint32_t>((bits[i] & exponent) == exponent);
    if (bad != 0)
      return false;
  }
  return true;
}

size_t first_non_finite(std::span<const float> values) {
  if (all_finite(values))
    return values.size();
  return static_cast<size_t>(
    std::find_if(values.begin(), values.end(), [](float x) { return !std::isfinite(x); }) -
    values.begin());
}

} // namespace darcy::compute
