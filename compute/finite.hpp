// The one finiteness check of values that cross a boundary (gradients, written rows, queries,
// activation blocks): NaN and infinity are refused at the edge, never stored or summed.
//
//   if (!compute::all_finite(grads)) return make_error(errc::non_finite, "gradients");
#pragma once

#include <cstddef>
#include <span>

namespace darcy::compute {

/// True when every value is finite. Runs at memory speed (a branch-free check per block).
bool all_finite(std::span<const float> values);

/// The position of the first value that is NaN or infinite; values.size() when none is.
size_t first_non_finite(std::span<const float> values);

} // namespace darcy::compute
