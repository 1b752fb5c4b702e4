// Keys from Python into the key_batch a lookup carries: a list or tuple of str or bytes, or a
// NumPy array of integer ids (an id is the key of its decimal digits, as the Estimator's
// integer columns have it, made once per distinct id and never a Python string). Each
// distinct key goes once, with the position of every input key among them.
#pragma once

#include <cstdint>
#include <vector>

#include <pybind11/pybind11.h>

#include "messages/embedding/key_batch.hpp"

namespace darcy::python {

struct python_keys {
  /// The distinct keys, in order of first appearance, each with compute::hash_key.
  key_batch distinct;
  /// inverse[i]: the position of input key i in `distinct`.
  std::vector<int64_t> inverse;
};

/// Reads `keys` (the GIL held). Throws python_error: errc::invalid_argument for anything but
/// str, bytes or a 1-D integer array (naming the first bad element's position and type), or a
/// negative id; errc::empty_batch for no key at all.
python_keys read_keys(const pybind11::handle& keys);

} // namespace darcy::python
