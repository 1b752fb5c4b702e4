// One embedding table as Python sees it: lookups that answer NumPy arrays, gradients applied
// by the shards' own optimizer, top-k and stats, over a session_handle. A pending lookup keeps
// what its backward needs, for darcy.torch's modules.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ops/embedding_ops.hpp"
#include "ops/full_logits.hpp"
#include "python/src/session.hpp"

namespace darcy::python {

class table_handle;

/// The rows of a lookup's distinct keys, and the handle their gradients go back through.
class pending_lookup {
public:
  pending_lookup(std::shared_ptr<table_handle> table, ops::lookup_handle handle, size_t rows)
    : table_(std::move(table)), handle_(std::move(handle)), rows_(rows) {}

  /// Sends d(loss)/d(rows), float32 of shape (distinct keys, dim), to the shards. Once only;
  /// a refused backward (darcy.DimensionMismatch, darcy.NonFinite, a wrong dtype) changes
  /// nothing and may be sent again corrected.
  void backward(const pybind11::handle& grads, std::optional<int64_t> step);

private:
  std::shared_ptr<table_handle> table_;
  ops::lookup_handle handle_;
  size_t rows_;
};

/// Logits of a batch (ops::sampled_logits or ops::full_logits), kept for their backward.
class pending_logits {
public:
  /// d(loss)/d(activations) for d(loss)/d(logits) at a step.
  using backward_fn = std::function<caf::expected<ops::matrix>(const ops::matrix&, int64_t)>;

  pending_logits(std::shared_ptr<table_handle> table, Eigen::Index rows, Eigen::Index cols,
                 backward_fn fn)
    : table_(std::move(table)), rows_(rows), cols_(cols), backward_(std::move(fn)) {}

  /// Sends d(loss)/d(logits), float32 of the logits' shape, to the rows involved and answers
  /// d(loss)/d(activations).
  pybind11::array backward(const pybind11::handle& dlogits, std::optional<int64_t> step);

private:
  std::shared_ptr<table_handle> table_;
  Eigen::Index rows_;
  Eigen::Index cols_;
  backward_fn backward_;
};

class table_handle : public std::enable_shared_from_this<table_handle> {
public:
  /// Creates the table in the session's service (once per session and name).
  table_handle(std::shared_ptr<session_handle> session, de_config config);

  const de_config& config() const { return config_; }
  session_handle& session() { return *session_; }

  /// The rows of `keys` in input order, float32 (keys, dim), as the table's admission and
  /// initializer give them; keys go to the service once each.
  pybind11::array lookup(const pybind11::handle& keys);

  /// (rows of the distinct keys without a copy, inverse: int64 position of each input key
  /// among them, pending lookup for the backward).
  pybind11::tuple lookup_for_backward(const pybind11::handle& keys);

  /// Applies grads (float32 (keys, dim); rows of a repeated key are summed) with the table's
  /// optimizer at `step` (by default one past the last). Bad keys or gradients raise before
  /// any row is touched.
  void apply_gradients(const pybind11::handle& keys, const pybind11::handle& grads,
                       std::optional<int64_t> step);

  /// Hands `keys` to the service ahead of the lookup that will read them (ops::prefetch_rows):
  /// a table on disk brings their rows into its memory tier. Changes no row.
  void prefetch(const pybind11::handle& keys);

  /// For each row of `vectors` (float32 (queries, dim)) its k best rows as (key, score)
  /// pairs, best first; `metric` "dot" or "cosine".
  /// approximate: from the table's ANN index (ops::approximate_top_k) with those settings.
  pybind11::list top_k(const pybind11::handle& vectors, uint32_t k, const std::string& metric,
                       bool approximate, uint32_t probes, uint32_t rerank,
                       uint32_t max_staleness_ms);

  pybind11::dict stats();

  /// (logits, labels, pending) of ops::sampled_logits: positive_keys are each example's keys
  /// in any form read_positive_keys takes, activations float32 (batch, dim), num_sampled
  /// negatives drawn by the table's sampler (at most num_sampled when `at_most`). Bad keys
  /// raise before the service is asked.
  pybind11::tuple sampled_logits(const pybind11::handle& positive_keys,
                                 const pybind11::handle& activations, uint32_t num_sampled,
                                 uint64_t seed, bool at_most);

  /// (logits, labels, keys, pending) of ops::full_logits: every row's logit, the rows' keys
  /// in column order (bytes); raises darcy.BatchTooLarge when the table holds more than
  /// max_rows.
  pybind11::tuple full_logits(const pybind11::handle& positive_keys,
                              const pybind11::handle& activations, uint64_t max_rows);

  /// `step`, or one past the last step this table used.
  int64_t next_step(std::optional<int64_t> step);

private:
  /// Each example's positive keys and the activations, read and checked as sampled_logits
  /// and full_logits take them.
  std::pair<std::vector<std::vector<std::string>>, ops::matrix> logit_inputs(
    const pybind11::handle& positive_keys, const pybind11::handle& activations) const;

  std::shared_ptr<session_handle> session_;
  de_config config_;
  std::atomic<int64_t> step_{0};
};

inline constexpr size_t any_rows = SIZE_MAX;

/// `values` as a C-contiguous float32 array of shape (rows, dim) (any count with any_rows):
/// errc::invalid_argument when it is no NumPy array or not float32, errc::dimension_mismatch
/// for another shape. `what` names them in the message ("gradients of 'words'").
pybind11::array_t<float> read_rows(const pybind11::handle& values, size_t rows, size_t dim,
                                   const std::string& what);

void bind_table(pybind11::module_& m);

} // namespace darcy::python
