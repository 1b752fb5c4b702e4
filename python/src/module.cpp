// darcy._darcy, the extension module under the darcy package (python/darcy/): errors,
// sessions, tables, local clusters and WALS. The package's Python files give it its public names.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "python/src/errors.hpp"
#include "python/src/local_cluster.hpp"
#include "python/src/session.hpp"
#include "python/src/table.hpp"
#include "python/src/table_group.hpp"
#include "python/src/wals.hpp"

#include "ops/load_plugin.hpp"

PYBIND11_MODULE(_darcy, m) {
  m.doc() = "Darcy's dynamic embedding service from Python (see docs/python.md)";
  darcy::python::bind_errors(m);
  darcy::python::bind_session(m);
  darcy::python::bind_table(m);
  darcy::python::bind_table_group(m);
  darcy::python::bind_local_cluster(m);
  darcy::python::bind_wals(m);
  m.def(
    "load_plugin",
    [](const std::string& path) {
      auto names = darcy::ops::load_plugin(path);
      if (!names)
        darcy::python::raise(names.error());
      return *names;
    },
    pybind11::arg("path"), "Loads a shared library of update rules; answers their names");
}
