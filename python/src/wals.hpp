// darcy.wals.train's core: ops::train_wals (the chief, its workers and factor shards) on a
// session, over a ratings file or a synthetic matrix, answering the factors as NumPy arrays
// without a copy, with the ids of their rows and columns.
#pragma once

#include <pybind11/pybind11.h>

namespace darcy::python {

void bind_wals(pybind11::module_& m);

} // namespace darcy::python
