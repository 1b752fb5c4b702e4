#include "compute/finite.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace darcy::compute {

namespace {

/// Whether every value of `values` is finite: a float or double is NaN or Inf exactly when its
/// exponent bits are all ones. The branch-free OR over whole blocks vectorizes; it checks
/// gradients at memory speed.
template <class Float, class Bits, Bits exponent>
bool finite_bits(std::span<const Float> values) {
  static_assert(sizeof(Float) == sizeof(Bits));
  const auto* bits = reinterpret_cast<const Bits*>(values.data());
  size_t n = values.size();
  for (size_t begin = 0; begin < n; begin += 4096) {
    auto end = std::min(n, begin + 4096);
    Bits bad = 0;
    for (size_t i = begin; i < end; ++i)
      bad |= static_cast<Bits>((bits[i] & exponent) == exponent);
    if (bad != 0)
      return false;
  }
  return true;
}

} // namespace

bool all_finite(std::span<const float> values) {
  return finite_bits<float, uint32_t, 0x7f800000u>(values);
}

bool all_finite(std::span<const double> values) {
  return finite_bits<double, uint64_t, 0x7ff0000000000000ull>(values);
}

size_t first_non_finite(std::span<const float> values) {
  if (all_finite(values))
    return values.size();
  return static_cast<size_t>(
    std::find_if(values.begin(), values.end(), [](float x) { return !std::isfinite(x); }) -
    values.begin());
}

} // namespace darcy::compute
