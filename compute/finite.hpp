// The one finiteness check of values that cross a boundary (gradients, written rows, queries,
// activation blocks): NaN and infinity are refused at the edge, never stored or summed.
//
//   if (!compute::all_finite(grads)) return make_error(errc::non_finite, "gradients");
#pragma once

#include <concepts>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

namespace darcy::compute {

/// True when every value is finite. Runs at memory speed (a branch-free check per block).
bool all_finite(std::span<const float> values);
bool all_finite(std::span<const double> values);

/// A contiguous container of float or double values: a vector, a dense Eigen matrix, vector or
/// map (c.data() points at all c.size() of them).
template <class C>
concept contiguous_floats =
  std::convertible_to<decltype(std::declval<const C&>().data()), const float*> ||
  std::convertible_to<decltype(std::declval<const C&>().data()), const double*>;

/// all_finite over such a container.
template <contiguous_floats C>
bool all_finite(const C& values) {
  using value = std::remove_cv_t<std::remove_pointer_t<decltype(values.data())>>;
  return all_finite(std::span<const value>{values.data(), static_cast<size_t>(values.size())});
}

/// The position of the first value that is NaN or infinite; values.size() when none is.
size_t first_non_finite(std::span<const float> values);

} // namespace darcy::compute
