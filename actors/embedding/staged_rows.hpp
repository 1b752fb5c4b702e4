// A sync's changed rows staged beside a shard's table. From the moment a sync is applied,
// lookups read these rows over the store's; they are merged into the store a chunk at a time,
// each chunk under the tables' lock, so that applying a sync holds lookups back for one chunk
// instead of for every row of the sync.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <caf/expected.hpp>

#include "stores/embedding/chain_replay.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::actors {

struct shard_table;

class staged_rows {
public:
  /// Every row's values must be `dim` floats, and every key distinct.
  explicit staged_rows(std::vector<stores::stored_row> rows);

  /// Overwrites row i of `out` (keys.size() × dim floats) with the staged row of keys[i], for
  /// every key staged.
  void read(std::span<const std::string_view> keys, std::span<float> out, size_t dim) const;

  /// Imports up to `limit` more rows into `store`, in order; true once every row is in it. A
  /// failed import leaves that row to the next call.
  caf::expected<bool> merge(stores::embedding_store& store, size_t limit);

  size_t size() const { return rows_.size(); }

private:
  std::vector<stores::stored_row> rows_;
  std::unordered_map<std::string_view, uint32_t> index_;
  /// rows_[0, merged_) are in the store.
  size_t merged_ = 0;
};

/// Lookups read table.staged over table.store after the store's lookup (see shard_table).
void read_staged(const shard_table& table, std::span<const std::string_view> keys,
                 std::span<float> out);

/// Merges what is left of every table's staged rows into its store and drops them: whatever
/// reads or writes a table other than a lookup calls it first. The tables' lock must be held.
caf::error finish_staged(std::map<std::string, shard_table>& tables);

} // namespace darcy::actors
