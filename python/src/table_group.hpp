// A jagged batch's ids looked up in many tables of one session in one request, for darcy.torch's
// collections: every feature's ids in turn, each feature served by one table, the rows given
// back per id, and one pending lookup whose backward sends every table's gradients in one
// message (those of a key repeated within a table summed first).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "ops/embedding_ops.hpp"
#include "python/src/table.hpp"

namespace darcy::python {

/// Where a batch's ids went: per feature its table and id count, per id its row among its
/// table's distinct keys.
struct feature_layout {
  std::vector<uint32_t> table_of;
  std::vector<size_t> counts;
  std::vector<uint32_t> position;
};

/// The rows of a feature lookup, and the handle their gradients go back through.
class pending_features {
public:
  pending_features(std::vector<std::shared_ptr<table_handle>> tables, ops::lookup_handle handle,
                   feature_layout layout, std::vector<size_t> distinct)
    : tables_(std::move(tables)),
      handle_(std::move(handle)),
      layout_(std::move(layout)),
      distinct_(std::move(distinct)) {}

  /// Sends d(loss)/d(rows), float32 laid out as the lookup's rows (each id's row in turn, of
  /// its table's dim), to the shards in one request, at `step` (by default one past the last
  /// step any of the tables used). Once only; a refused backward (darcy.DimensionMismatch,
  /// darcy.NonFinite, a wrong dtype) changes no table and may be sent again corrected.
  void backward(const pybind11::handle& grads, std::optional<int64_t> step);

private:
  std::vector<std::shared_ptr<table_handle>> tables_;
  ops::lookup_handle handle_;
  feature_layout layout_;
  /// Distinct keys of each table, 0 for a table given no id.
  std::vector<size_t> distinct_;
};

/// (rows, pending) for the integer `ids` of a jagged batch: counts[f] ids of feature f, in
/// turn, looked up in tables[table_of[f]], every table in one request. `rows` is float32, 1-D,
/// each id's row in input order (of its table's dim: (ids, dim) when all dims agree);
/// `pending` is a pending_features, or None without `for_backward`. Raises
/// darcy.InvalidArgument, before any request, for tables of more than one session, counts that
/// do not sum to the ids or a table index out of range, a negative id or a non-integer array.
pybind11::tuple lookup_features(const pybind11::list& tables, const pybind11::array& ids,
                                const pybind11::array& counts, const pybind11::array& table_of,
                                bool for_backward);

void bind_table_group(pybind11::module_& m);

} // namespace darcy::python
