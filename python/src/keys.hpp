// Keys from Python into the key_batch a lookup carries: a list or tuple of str or bytes, or a
// NumPy array of integer ids (an id is the key of its decimal digits, as the Estimator's
// integer columns have it, made once per distinct id and never a Python string). Each
// distinct key goes once, with the position of every input key among them.
#pragma once

#include <cstdint>
#include <string>
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

/// Each example's positive keys for a sampled softmax, read from `positives` (the GIL held)
/// in any form read_keys takes: a 1-D integer array is one id an example, a 2-D one a row of
/// ids an example; a list or tuple has one entry an example, that entry being one key (str or
/// bytes) or a list, tuple or 1-D integer array of its keys. An id's key is its decimal digits,
/// as in read_keys. Throws python_error: errc::invalid_argument for anything else (naming the
/// example and key), a negative id or an example without a key; errc::empty_batch for no
/// example at all.
std::vector<std::vector<std::string>> read_positive_keys(const pybind11::handle& positives);

} // namespace darcy::python
