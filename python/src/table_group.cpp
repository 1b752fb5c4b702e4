#include "python/src/table_group.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "messages/error.hpp"
#include "ops/distinct_keys.hpp"
#include "stores/embedding/de_config.hpp"

namespace py = pybind11;

namespace darcy::python {

namespace {

/// `a` (1-D, integers) as int64 values; errc::invalid_argument naming `what` otherwise.
std::vector<int64_t> integers(const py::array& a, const std::string& what) {
  auto kind = a.dtype().kind();
  if (a.ndim() != 1 || (kind != 'i' && kind != 'u'))
    raise(errc::invalid_argument, what + " are a 1-D integer array");
  auto values = py::array_t<int64_t, py::array::forcecast | py::array::c_style>::ensure(a);
  return {values.data(), values.data() + values.size()};
}

} // namespace

void pending_features::backward(const py::handle& grads, std::optional<int64_t> step) {
  size_t total = 0;
  for (size_t f = 0; f < layout_.counts.size(); ++f)
    total += layout_.counts[f] * tables_[layout_.table_of[f]]->config().dim;
  if (!py::isinstance<py::array>(grads))
    raise(errc::invalid_argument, "the rows' gradients are a float32 NumPy array");
  auto given = py::reinterpret_borrow<py::array>(grads);
  if (!given.dtype().is(py::dtype::of<float>()))
    raise(errc::invalid_argument, "the rows' gradients of dtype " +
                                    std::string{py::str(given.dtype())} + "; they are float32");
  if (static_cast<size_t>(given.size()) != total)
    raise(errc::dimension_mismatch,
          std::to_string(given.size()) + " gradient values for rows of " + std::to_string(total));
  auto g = py::array_t<float, py::array::c_style>::ensure(given);
  std::vector<ops::matrix> sums;
  for (size_t t = 0; t < tables_.size(); ++t)
    sums.push_back(ops::matrix::Zero(static_cast<Eigen::Index>(distinct_[t]),
                                     static_cast<Eigen::Index>(tables_[t]->config().dim)));
  {
    py::gil_scoped_release release;
    const float* from = g.data();
    size_t id = 0;
    for (size_t f = 0; f < layout_.counts.size(); ++f) {
      auto& into = sums[layout_.table_of[f]];
      auto dim = static_cast<size_t>(into.cols());
      for (size_t i = 0; i < layout_.counts[f]; ++i, ++id, from += dim) {
        float* row = into.data() + layout_.position[id] * dim;
        for (size_t d = 0; d < dim; ++d)
          row[d] += from[d];
      }
    }
  }
  std::vector<const ops::matrix*> sent;
  for (size_t t = 0; t < tables_.size(); ++t) {
    if (distinct_[t] == 0)
      continue;
    std::span<const float> values{sums[t].data(), static_cast<size_t>(sums[t].size())};
    raise_if(stores::check_gradients(tables_[t]->config(), distinct_[t], values));
    sent.push_back(&sums[t]);
  }
  int64_t at = 0;
  for (auto& t : tables_)
    at = std::max(at, t->next_step(step));
  if (sent.empty())
    return;
  raise_if(
    tables_.front()->session().run([&](ops::session&) { return handle_.backward(sent, at); }));
}

py::tuple lookup_features(const py::list& tables, const py::array& ids, const py::array& counts,
                          const py::array& table_of, bool for_backward) {
  std::vector<std::shared_ptr<table_handle>> handles;
  for (auto t : tables) {
    auto handle = t.cast<std::shared_ptr<table_handle>>();
    for (auto& other : handles) {
      if (&other->session() != &handle->session())
        raise(errc::invalid_argument, "tables '" + other->config().name + "' and '" +
                                        handle->config().name +
                                        "' come from two sessions; one request needs one");
      if (other == handle)
        raise(errc::invalid_argument, "table '" + handle->config().name + "' is named twice");
    }
    handles.push_back(std::move(handle));
  }
  if (handles.empty())
    raise(errc::empty_batch, "no table to look up");
  auto id_values = integers(ids, "ids");
  auto count_values = integers(counts, "counts");
  auto table_values = integers(table_of, "table indexes");
  if (count_values.size() != table_values.size())
    raise(errc::invalid_argument, std::to_string(count_values.size()) + " counts for " +
                                    std::to_string(table_values.size()) + " features");
  feature_layout layout;
  int64_t sum = 0;
  for (size_t f = 0; f < count_values.size(); ++f) {
    if (count_values[f] < 0)
      raise(errc::invalid_argument, "feature " + std::to_string(f) + " has a negative count");
    if (table_values[f] < 0 || static_cast<size_t>(table_values[f]) >= handles.size())
      raise(errc::invalid_argument, "feature " + std::to_string(f) + " names table " +
                                      std::to_string(table_values[f]) + " of " +
                                      std::to_string(handles.size()));
    sum += count_values[f];
    layout.counts.push_back(static_cast<size_t>(count_values[f]));
    layout.table_of.push_back(static_cast<uint32_t>(table_values[f]));
  }
  if (static_cast<size_t>(sum) != id_values.size())
    raise(errc::invalid_argument, "counts sum to " + std::to_string(sum) + ", but there are " +
                                    std::to_string(id_values.size()) + " ids");
  std::vector<ops::distinct_keys> distinct(handles.size());
  size_t id = 0;
  for (size_t f = 0; f < layout.counts.size(); ++f)
    for (size_t i = 0; i < layout.counts[f]; ++i, ++id) {
      if (id_values[id] < 0)
        raise(errc::invalid_argument, "id " + std::to_string(id) + " is the negative id " +
                                        std::to_string(id_values[id]) + "; ids are 0 or more");
      layout.position.push_back(
        distinct[layout.table_of[f]].add_id(static_cast<uint64_t>(id_values[id])));
    }
  std::vector<size_t> sizes;
  std::vector<ops::table_lookup> request;
  for (size_t t = 0; t < handles.size(); ++t) {
    sizes.push_back(distinct[t].size());
    if (sizes.back() > 0) {
      auto& cfg = handles[t]->config();
      request.push_back({&cfg, cfg.name, {}, distinct[t].take()});
    }
  }
  size_t total = 0;
  for (size_t f = 0; f < layout.counts.size(); ++f)
    total += layout.counts[f] * handles[layout.table_of[f]]->config().dim;
  py::array_t<float> rows(static_cast<py::ssize_t>(total));
  ops::lookup_handle handle;
  if (!request.empty()) {
    auto found = value_or_raise(handles.front()->session().run([&](ops::session& s) {
      return ops::dynamic_embedding_lookup(s, std::move(request), for_backward);
    }));
    std::vector<const ops::matrix*> of_table(handles.size(), nullptr);
    for (size_t t = 0, r = 0; t < handles.size(); ++t)
      if (sizes[t] > 0)
        of_table[t] = &found.rows[r++];
    float* into = rows.mutable_data();
    {
      py::gil_scoped_release release;
      size_t at = 0;
      for (size_t f = 0; f < layout.counts.size(); ++f) {
        if (layout.counts[f] == 0)
          continue;
        auto& from = *of_table[layout.table_of[f]];
        auto dim = static_cast<size_t>(from.cols());
        for (size_t i = 0; i < layout.counts[f]; ++i, ++at, into += dim)
          std::memcpy(into, from.data() + layout.position[at] * dim, dim * sizeof(float));
      }
    }
    handle = found.handle;
  }
  if (!for_backward)
    return py::make_tuple(rows, py::none());
  return py::make_tuple(rows, pending_features{std::move(handles), std::move(handle),
                                               std::move(layout), std::move(sizes)});
}

void bind_table_group(py::module_& m) {
  py::class_<pending_features>(m, "_PendingFeatures")
    .def("backward", &pending_features::backward, py::arg("grads"), py::arg("step") = py::none());
  m.def("_lookup_features", &lookup_features, py::arg("tables"), py::arg("ids"), py::arg("counts"),
        py::arg("table_of"), py::arg("for_backward"));
}

} // namespace darcy::python
