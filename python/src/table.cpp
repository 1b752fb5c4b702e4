#include "python/src/table.hpp"

#include <cstring>

#include "messages/error.hpp"
#include "ops/embedding_prefetch.hpp"
#include "python/src/keys.hpp"
#include "python/src/table_config.hpp"
#include "stores/embedding/de_config.hpp"

namespace py = pybind11;

namespace darcy::python {

namespace {

/// A NumPy view of `m` that owns it: no copy.
py::array owning_array(ops::matrix&& m) {
  auto* held = new ops::matrix(std::move(m));
  py::capsule owner(held, [](void* p) { delete static_cast<ops::matrix*>(p); });
  auto cols = static_cast<py::ssize_t>(held->cols());
  return py::array_t<float>(
    {static_cast<py::ssize_t>(held->rows()), cols},
    {cols * static_cast<py::ssize_t>(sizeof(float)), static_cast<py::ssize_t>(sizeof(float))},
    held->data(), owner);
}

py::array int64_array(std::vector<int64_t>&& v) {
  auto* held = new std::vector<int64_t>(std::move(v));
  py::capsule owner(held, [](void* p) { delete static_cast<std::vector<int64_t>*>(p); });
  return py::array_t<int64_t>({static_cast<py::ssize_t>(held->size())}, held->data(), owner);
}

std::string shape_of(const py::array& a) {
  std::string text = "(";
  for (py::ssize_t d = 0; d < a.ndim(); ++d)
    text += (d > 0 ? ", " : "") + std::to_string(a.shape(d));
  return text + (a.ndim() == 1 ? ",)" : ")");
}

/// The distinct keys' rows of `keys` in `table`, with each input key's position among them.
struct distinct_lookup {
  ops::multi_lookup_result result;
  std::vector<int64_t> inverse;
};

distinct_lookup fetch(session_handle& session, const de_config& config, const py::handle& keys,
                      bool for_backward) {
  auto k = read_keys(keys);
  auto found = session.run([&](ops::session& s) {
    std::vector<ops::table_lookup> request{{&config, config.name, {}, std::move(k.distinct)}};
    return ops::dynamic_embedding_lookup(s, std::move(request), for_backward);
  });
  return {value_or_raise(std::move(found)), std::move(k.inverse)};
}

} // namespace

py::array_t<float> read_rows(const py::handle& values, size_t rows, size_t dim,
                             const std::string& what) {
  if (!py::isinstance<py::array>(values))
    raise(errc::invalid_argument, what + " are a " +
                                    std::string{py::str(values.get_type().attr("__name__"))} +
                                    "; pass a float32 NumPy array (torch: tensor.numpy())");
  auto a = py::reinterpret_borrow<py::array>(values);
  if (!a.dtype().is(py::dtype::of<float>()))
    raise(errc::invalid_argument,
          what + " of dtype " + std::string{py::str(a.dtype())} + "; they are float32");
  if (a.ndim() != 2 || (rows != any_rows && static_cast<size_t>(a.shape(0)) != rows) ||
      static_cast<size_t>(a.shape(1)) != dim)
    raise(errc::dimension_mismatch,
          what + " of shape " + shape_of(a) + " for " +
            (rows != any_rows ? std::to_string(rows) : std::string{"rows"}) + " of dim " +
            std::to_string(dim));
  return py::array_t<float, py::array::c_style>::ensure(a);
}

void pending_lookup::backward(const py::handle& grads, std::optional<int64_t> step) {
  auto& cfg = table_->config();
  auto g = read_rows(grads, rows_, cfg.dim, "gradients of '" + cfg.name + "'");
  auto at = table_->next_step(step);
  std::span<const float> values{g.data(), rows_ * cfg.dim};
  raise_if(table_->session().run([&](ops::session&) { return handle_.backward(values, at); }));
}

py::array pending_logits::backward(const py::handle& dlogits, std::optional<int64_t> step) {
  auto& cfg = table_->config();
  auto g = read_rows(dlogits, static_cast<size_t>(rows_), static_cast<size_t>(cols_),
                     "logit gradients of '" + cfg.name + "'");
  ops::matrix d = Eigen::Map<const ops::matrix>(g.data(), rows_, cols_);
  auto at = table_->next_step(step);
  auto back = table_->session().run([&](ops::session&) { return backward_(d, at); });
  return owning_array(value_or_raise(std::move(back)));
}

table_handle::table_handle(std::shared_ptr<session_handle> session, de_config config)
  : session_(std::move(session)), config_(std::move(config)) {
  raise_if(session_->run([&](ops::session& s) { return s.ensure_embedding(config_); }));
}

int64_t table_handle::next_step(std::optional<int64_t> step) {
  if (!step)
    return ++step_;
  if (*step < 0)
    raise(errc::invalid_argument, "step " + std::to_string(*step) + "; steps are 0 or more");
  step_ = *step;
  return *step;
}

py::array table_handle::lookup(const py::handle& keys) {
  auto found = fetch(*session_, config_, keys, false);
  auto& rows = found.result.rows.front();
  auto dim = static_cast<size_t>(config_.dim);
  py::array_t<float> out(
    {static_cast<py::ssize_t>(found.inverse.size()), static_cast<py::ssize_t>(dim)});
  float* into = out.mutable_data();
  {
    py::gil_scoped_release release;
    for (size_t i = 0; i < found.inverse.size(); ++i)
      std::memcpy(into + i * dim, rows.data() + found.inverse[i] * dim, dim * sizeof(float));
  }
  return out;
}

py::tuple table_handle::lookup_for_backward(const py::handle& keys) {
  auto found = fetch(*session_, config_, keys, true);
  auto distinct = static_cast<size_t>(found.result.rows.front().rows());
  pending_lookup pending{shared_from_this(), found.result.handle, distinct};
  return py::make_tuple(owning_array(std::move(found.result.rows.front())),
                        int64_array(std::move(found.inverse)), std::move(pending));
}

void table_handle::apply_gradients(const py::handle& keys, const py::handle& grads,
                                   std::optional<int64_t> step) {
  auto k = read_keys(keys);
  auto dim = static_cast<size_t>(config_.dim);
  auto g = read_rows(grads, k.inverse.size(), dim, "gradients of '" + config_.name + "'");
  auto at = next_step(step);
  auto distinct = k.distinct.size();
  auto err = session_->run([&](ops::session& s) -> caf::error {
    std::span<const float> given{g.data(), k.inverse.size() * dim};
    if (auto err = stores::check_gradients(config_, k.inverse.size(), given))
      return err;
    std::vector<float> sums(distinct * dim, 0.0f);
    for (size_t i = 0; i < k.inverse.size(); ++i)
      for (size_t d = 0; d < dim; ++d)
        sums[k.inverse[i] * dim + d] += given[i * dim + d];
    std::vector<ops::table_lookup> request{{&config_, config_.name, {}, std::move(k.distinct)}};
    auto found = ops::dynamic_embedding_lookup(s, std::move(request), true);
    if (!found)
      return std::move(found.error());
    return found->handle.backward(std::span<const float>{sums}, at);
  });
  raise_if(err);
}

void table_handle::prefetch(const py::handle& keys) {
  auto k = read_keys(keys);
  auto err = session_->run([&](ops::session& s) {
    std::vector<ops::table_lookup> request{{&config_, config_.name, {}, std::move(k.distinct)}};
    return ops::prefetch_rows(s, std::move(request));
  });
  raise_if(err);
}

py::list table_handle::top_k(const py::handle& vectors, uint32_t k, const std::string& metric,
                             bool approximate, uint32_t probes, uint32_t rerank,
                             uint32_t max_staleness_ms) {
  top_k_score score;
  if (metric == "dot")
    score = top_k_score::inner_product;
  else if (metric == "cosine")
    score = top_k_score::cosine;
  else
    raise(errc::invalid_argument, "metric '" + metric + "'; \"dot\" or \"cosine\"");
  if (k == 0)
    raise(errc::invalid_argument, "k must be at least 1");
  auto q = read_rows(vectors, any_rows, config_.dim, "queries of '" + config_.name + "'");
  auto queries = static_cast<size_t>(q.shape(0));
  ops::matrix m = Eigen::Map<const ops::matrix>(q.data(), static_cast<Eigen::Index>(queries),
                                                static_cast<Eigen::Index>(config_.dim));
  auto hits = value_or_raise(session_->run([&](ops::session& s) -> caf::expected<top_k_result> {
    if (approximate)
      return ops::approximate_top_k(s, m, k, config_, config_.name, score,
                                    {probes, rerank, max_staleness_ms});
    return ops::top_k(s, m, k, config_, config_.name, score);
  }));
  py::list result;
  for (size_t i = 0; i + 1 < hits.offsets.size(); ++i) {
    py::list one;
    for (auto h = hits.offsets[i]; h < hits.offsets[i + 1]; ++h)
      one.append(py::make_tuple(hits.keys[h], hits.scores[h]));
    result.append(one);
  }
  return result;
}

std::pair<std::vector<std::vector<std::string>>, ops::matrix> table_handle::logit_inputs(
  const py::handle& positives, const py::handle& activations) const {
  auto positive_keys = read_positive_keys(positives);
  auto a = read_rows(activations, positive_keys.size(), config_.dim,
                     "activations for '" + config_.name + "'");
  ops::matrix m =
    Eigen::Map<const ops::matrix>(a.data(), static_cast<Eigen::Index>(positive_keys.size()),
                                  static_cast<Eigen::Index>(config_.dim));
  return {std::move(positive_keys), std::move(m)};
}

py::tuple table_handle::sampled_logits(const py::handle& positives, const py::handle& activations,
                                       uint32_t num_sampled, uint64_t seed, bool at_most) {
  auto [positive_keys, m] = logit_inputs(positives, activations);
  auto result = value_or_raise(session_->run([&](ops::session& s) {
    return ops::sampled_logits(s, positive_keys, m, num_sampled, config_, config_.name, seed,
                               at_most);
  }));
  auto rows = result.logits.rows();
  auto cols = result.logits.cols();
  auto logits = owning_array(ops::matrix{result.logits});
  auto labels = owning_array(ops::matrix{result.labels});
  auto kept = std::make_shared<ops::sampled_logits_result>(std::move(result));
  return py::make_tuple(
    logits, labels,
    pending_logits{shared_from_this(), rows, cols,
                   [kept](const ops::matrix& d, int64_t at) { return kept->backward(d, at); }});
}

py::tuple table_handle::full_logits(const py::handle& positives, const py::handle& activations,
                                    uint64_t max_rows) {
  auto [positive_keys, m] = logit_inputs(positives, activations);
  auto result = value_or_raise(session_->run([&](ops::session& s) {
    return ops::full_logits(s, positive_keys, m, config_, config_.name, max_rows);
  }));
  auto rows = result.logits.rows();
  auto cols = result.logits.cols();
  auto logits = owning_array(ops::matrix{result.logits});
  auto labels = owning_array(ops::matrix{result.labels});
  py::list keys;
  for (auto& k : result.keys)
    keys.append(py::bytes(k));
  auto kept = std::make_shared<ops::full_logits_result>(std::move(result));
  return py::make_tuple(
    logits, labels, keys,
    pending_logits{shared_from_this(), rows, cols,
                   [kept](const ops::matrix& d, int64_t at) { return kept->backward(d, at); }});
}

py::dict table_handle::stats() {
  auto s =
    value_or_raise(session_->run([&](ops::session& s) { return ops::stats(s, config_.name); }));
  py::dict d;
  d["rows"] = s.rows;
  d["bytes"] = s.bytes;
  d["raw_bytes"] = s.raw_bytes;
  d["cached_rows"] = s.cached_rows;
  d["cache_capacity"] = s.cache_capacity;
  d["tier_hits"] = s.tier_hits;
  d["tier_misses"] = s.tier_misses;
  d["disk_reads"] = s.disk_reads;
  d["prefetched_rows"] = s.prefetched_rows;
  d["disk_bytes"] = s.disk_bytes;
  d["evictions"] = s.evictions;
  d["dropped_updates"] = s.dropped_updates;
  d["retried_requests"] = s.retried_requests;
  d["recovered_shards"] = s.recovered_shards;
  d["ann_rows"] = s.ann_rows;
  d["ann_backlog"] = s.ann_backlog;
  d["ann_staleness_p99_s"] = s.ann_staleness_p99_s;
  return d;
}

void bind_table(py::module_& m) {
  py::class_<pending_lookup>(m, "_PendingLookup")
    .def("backward", &pending_lookup::backward, py::arg("grads"), py::arg("step") = py::none());
  py::class_<pending_logits>(m, "_PendingLogits")
    .def("backward", &pending_logits::backward, py::arg("dlogits"), py::arg("step") = py::none());
  py::class_<table_handle, std::shared_ptr<table_handle>>(m, "_Table")
    .def(py::init([](std::shared_ptr<session_handle> session, table_options o) {
           return std::make_shared<table_handle>(std::move(session), table_config(o));
         }),
         py::arg("session"), py::arg("options"))
    .def_property_readonly("name", [](const table_handle& t) { return t.config().name; })
    .def_property_readonly("dim", [](const table_handle& t) { return t.config().dim; })
    .def("lookup", &table_handle::lookup, py::arg("keys"))
    .def("lookup_for_backward", &table_handle::lookup_for_backward, py::arg("keys"))
    .def("apply_gradients", &table_handle::apply_gradients, py::arg("keys"), py::arg("grads"),
         py::arg("step") = py::none())
    .def("top_k", &table_handle::top_k, py::arg("vectors"), py::arg("k"), py::arg("metric") = "dot",
         py::arg("approximate") = false, py::arg("probes") = 0, py::arg("rerank") = 0,
         py::arg("max_staleness_ms") = 10000)
    .def("prefetch", &table_handle::prefetch, py::arg("keys"))
    .def("stats", &table_handle::stats)
    .def("sampled_logits", &table_handle::sampled_logits, py::arg("positive_keys"),
         py::arg("activations"), py::arg("num_sampled"), py::arg("seed") = 1,
         py::arg("at_most") = false)
    .def("full_logits", &table_handle::full_logits, py::arg("positive_keys"),
         py::arg("activations"), py::arg("max_rows"));
  py::class_<table_options>(m, "_TableOptions")
    .def(py::init<>())
    .def_readwrite("name", &table_options::name)
    .def_readwrite("dim", &table_options::dim)
    .def_readwrite("optimizer", &table_options::optimizer)
    .def_readwrite("initializer", &table_options::initializer)
    .def_readwrite("admission", &table_options::admission)
    .def_readwrite("eviction", &table_options::eviction)
    .def_readwrite("sampler", &table_options::sampler)
    .def_readwrite("ann", &table_options::ann)
    .def_readwrite("store", &table_options::store)
    .def_readwrite("max_batch", &table_options::max_batch)
    .def_readwrite("cache_bytes", &table_options::cache_bytes);
}

} // namespace darcy::python
