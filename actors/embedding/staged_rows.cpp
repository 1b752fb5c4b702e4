#include "actors/embedding/staged_rows.hpp"

#include <algorithm>
#include <limits>

#include "actors/embedding/shard_tables.hpp"

namespace darcy::actors {

staged_rows::staged_rows(std::vector<stores::stored_row> rows) : rows_(std::move(rows)) {
  index_.reserve(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i)
    index_.emplace(rows_[i].key, static_cast<uint32_t>(i));
}

void staged_rows::read(std::span<const std::string_view> keys, std::span<float> out,
                       size_t dim) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    auto at = index_.find(keys[i]);
    if (at == index_.end())
      continue;
    auto& values = rows_[at->second].values;
    std::copy_n(values.begin(), std::min(dim, values.size()), out.begin() + i * dim);
  }
}

caf::expected<bool> staged_rows::merge(stores::embedding_store& store, size_t limit) {
  auto end = rows_.size() - merged_ > limit ? merged_ + limit : rows_.size();
  for (; merged_ < end; ++merged_)
    if (auto err = store.import_row(rows_[merged_].record()))
      return err;
  return merged_ == rows_.size();
}

void read_staged(const shard_table& table, std::span<const std::string_view> keys,
                 std::span<float> out) {
  if (table.staged)
    table.staged->read(keys, out, table.store->dim());
}

caf::error finish_staged(std::map<std::string, shard_table>& tables) {
  for (auto& [name, table] : tables) {
    if (!table.staged)
      continue;
    auto done = table.staged->merge(*table.store, std::numeric_limits<size_t>::max());
    if (!done)
      return std::move(done.error());
    table.staged.reset();
  }
  return {};
}

} // namespace darcy::actors
