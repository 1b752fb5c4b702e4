// The de_config of a table made from Python: darcy's optimizer, initializer, admission,
// eviction and sampler classes (python/darcy/config.py) arrive as dicts with a "kind" and their
// fields.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "messages/embedding/embedding_config.hpp"

namespace darcy::python {

struct table_options {
  std::string name;
  uint32_t dim = 0;
  pybind11::dict optimizer, initializer, admission, eviction, sampler;
  /// Empty: no ANN index.
  pybind11::dict ann;
  /// "memory", "leveldb:DIR" or "redis://..." (store_choice.hpp).
  std::string store;
  uint32_t max_batch = 1 << 16;
  uint64_t cache_bytes = uint64_t{256} << 20;
};

/// Throws python_error (errc::invalid_argument) for an unknown kind or a field of the wrong
/// type; the service validates the values themselves when the table is created.
de_config table_config(const table_options& o);

} // namespace darcy::python
