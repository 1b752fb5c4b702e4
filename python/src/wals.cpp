#include "python/src/wals.hpp"

#include <memory>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "ops/wals_train.hpp"
#include "python/src/errors.hpp"
#include "python/src/session.hpp"
#include "stores/data/wals_data.hpp"

namespace py = pybind11;

namespace darcy::python {

namespace {

/// What darcy.wals.train passes: the data and the run's settings.
struct wals_options {
  std::string path, format, checkpoint_dir;
  uint64_t rows = 0, cols = 0, nnz = 0, seed = 1;
  uint32_t dim = 64, sweeps = 10, workers = 2, cg_steps = 3;
  float lambda = 0.1f, sigma = 0.5f, alpha = 1.0f, holdout = 0.0f;
};

py::array factors(stores::float_matrix&& m) {
  auto* held = new stores::float_matrix(std::move(m));
  py::capsule owner(held, [](void* p) { delete static_cast<stores::float_matrix*>(p); });
  auto cols = static_cast<py::ssize_t>(held->cols);
  return py::array_t<float>(
    {static_cast<py::ssize_t>(held->rows), cols},
    {cols * static_cast<py::ssize_t>(sizeof(float)), static_cast<py::ssize_t>(sizeof(float))},
    held->values.data(), owner);
}

py::dict train(session_handle& session, const wals_options& o) {
  ops::wals_train_options opts;
  opts.data.path = o.path;
  opts.data.format = o.format;
  opts.data.rows = o.rows;
  opts.data.cols = o.cols;
  opts.data.nnz = o.nnz;
  opts.data.seed = o.seed;
  opts.data.holdout = o.holdout;
  opts.params.dim = o.dim;
  opts.params.lambda = o.lambda;
  opts.params.sigma = o.sigma;
  opts.params.alpha = o.alpha;
  opts.params.cg_steps = o.cg_steps;
  opts.params.seed = o.seed;
  opts.sweeps = o.sweeps;
  opts.workers = o.workers;
  opts.checkpoint_dir = o.checkpoint_dir;
  if (o.path.empty() != o.format.empty())
    raise(errc::invalid_argument, "a ratings file needs its format, and a format its file");
  auto run = session.run(
    [&](ops::session& s) -> caf::expected<std::pair<ops::wals_result, stores::wals_dataset>> {
      auto data = stores::load_dataset(opts.data);
      if (!data)
        return std::move(data.error());
      auto shared = std::make_shared<const stores::wals_dataset>(std::move(*data));
      auto result = ops::train_wals(s, opts, shared);
      if (!result)
        return std::move(result.error());
      return std::pair{std::move(*result), *shared};
    });
  auto [result, data] = value_or_raise(std::move(run));
  py::dict out;
  out["user_factors"] = factors(std::move(result.u));
  out["item_factors"] = factors(std::move(result.v));
  out["losses"] = result.losses;
  out["row_ids"] = data.row_ids;
  out["col_ids"] = data.col_ids;
  out["users"] = data.users;
  out["items"] = data.items;
  out["chief_restarts"] = result.chief_restarts;
  return out;
}

} // namespace

void bind_wals(py::module_& m) {
  py::class_<wals_options>(m, "_WalsOptions")
    .def(py::init<>())
    .def_readwrite("path", &wals_options::path)
    .def_readwrite("format", &wals_options::format)
    .def_readwrite("checkpoint_dir", &wals_options::checkpoint_dir)
    .def_readwrite("rows", &wals_options::rows)
    .def_readwrite("cols", &wals_options::cols)
    .def_readwrite("nnz", &wals_options::nnz)
    .def_readwrite("seed", &wals_options::seed)
    .def_readwrite("dim", &wals_options::dim)
    .def_readwrite("sweeps", &wals_options::sweeps)
    .def_readwrite("workers", &wals_options::workers)
    .def_readwrite("cg_steps", &wals_options::cg_steps)
    .def_readwrite("lambda_", &wals_options::lambda)
    .def_readwrite("sigma", &wals_options::sigma)
    .def_readwrite("alpha", &wals_options::alpha)
    .def_readwrite("holdout", &wals_options::holdout);
  m.def("_wals_train", &train, py::arg("session"), py::arg("options"));
}

} // namespace darcy::python
