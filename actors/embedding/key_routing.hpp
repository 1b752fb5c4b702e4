// How the embedding master splits a multi-table batch among its shards and puts the answers
// back together: each key is deduplicated (its occurrences counted) and routed by the hash it
// carries (no key is hashed here), rows from a shard go straight to their final positions, and
// gradients of a repeated key are summed into the row its shard holds.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "messages/embedding/embedding_interfaces.hpp"

namespace darcy::actors {

/// An embedding's config by name, or errc::unknown_embedding naming it.
using config_finder = std::function<caf::expected<const de_config*>(const std::string&)>;

/// The dim of each table after checking it: known, and its batch within bounds
/// (stores::check_batch); errc::empty_batch when `tables` is empty.
caf::expected<std::vector<uint32_t>> checked_dims(const std::vector<table_keys>& tables,
                                                  const config_finder& configs);

/// As above, for a lookup into `out`: one buffer per table of keys * dim values, or
/// errc::dimension_mismatch.
caf::expected<std::vector<uint32_t>> checked_dims(const std::vector<table_keys>& tables,
                                                  const config_finder& configs,
                                                  const std::vector<std::span<float>>& out);

/// `keys` as a key_batch, each with its compute::hash_key.
key_batch hash_keys(const std::vector<std::string>& keys);

class routed_batch {
public:
  /// Splits `tables` among `shard_count` shards. dims[t] is table t's dim.
  routed_batch(const std::vector<table_keys>& tables, std::vector<uint32_t> dims,
               size_t shard_count);

  size_t tables() const { return dims_.size(); }
  const std::string& name(size_t table) const { return names_[table]; }
  uint32_t dim(size_t table) const { return dims_[table]; }
  /// Input keys of `table` (before deduplication).
  size_t keys(size_t table) const { return inputs_[table]; }

  /// Shards that hold at least one key of the batch, ascending.
  const std::vector<size_t>& shards() const { return involved_; }

  /// Shard s's part: one table_keys per table (possibly empty), distinct keys, each counting
  /// its occurrences in the input (key_batch::count) when some key occurs more than once.
  const std::vector<table_keys>& part(size_t s) const { return parts_[s]; }

  /// Forgets the keys, keeping what scatter and gather need.
  void drop_keys() { parts_.clear(); }

  /// Copies shard s's rows (one buffer per table, part(s) order) to every position of their
  /// keys in `out` (one buffer per table, input order). Fails with errc::dimension_mismatch
  /// when a buffer has the wrong size.
  caf::error scatter(size_t s, const std::vector<shared_floats>& rows,
                     const std::vector<std::span<float>>& out) const;
  caf::error scatter(size_t s, const std::vector<shared_floats>& rows,
                     std::vector<std::vector<float>>& out) const;

  /// Shard s's gradients: for each table, the sum of the rows of `grads` (one buffer per
  /// table, input order) over the positions of each of the shard's keys.
  std::vector<shared_floats> gather(size_t s,
                                    const std::vector<std::span<const float>>& grads) const;

private:
  struct placed {
    uint32_t input;
    uint32_t row;
  };
  std::vector<uint32_t> dims_;
  std::vector<std::string> names_;
  std::vector<size_t> inputs_;
  std::vector<std::vector<table_keys>> parts_;
  /// by_shard_[s][t]: the input positions of table t on shard s and their row there.
  std::vector<std::vector<std::vector<placed>>> by_shard_;
  /// counts_[s][t]: distinct keys of table t on shard s.
  std::vector<std::vector<uint32_t>> counts_;
  std::vector<size_t> involved_;
};

/// Checks gradients for `batch`: one finite buffer of keys * dim values per table, no table
/// read-only (stores::check_gradients).
caf::error check_routed_gradients(const routed_batch& batch,
                                  const std::vector<std::span<const float>>& grads,
                                  const config_finder& configs);

} // namespace darcy::actors
