// Rows on their way from the LevelDB tier's memory to its disk: the records of one write-back,
// held until the background writer has put them in the value log and their pointers in the
// database, so that a load finds a row's newest record meanwhile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stores/embedding/value_log.hpp"

namespace darcy::stores {

class pending_rows {
public:
  /// Room for `rows` rows; more may be added, found more slowly.
  explicit pending_rows(size_t rows);

  /// Empty, with room for `rows` rows, keeping the memory it has.
  void reset(size_t rows);

  /// `hash` is compute::hash_key(key); `key` must not have been added before. `indexed`: the
  /// database holds an older record of the row.
  void add(std::string_view key, uint64_t hash, std::string_view record, bool indexed);

  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  std::string_view key(size_t i) const { return {keys_.data() + rows_[i].key, rows_[i].key_size}; }
  std::string_view record(size_t i) const {
    return {records_.data() + rows_[i].record, rows_[i].record_size};
  }
  bool indexed(size_t i) const { return rows_[i].indexed; }
  uint64_t hash(size_t i) const { return hashes_[i]; }
  /// The position of `key`'s row, if it is one of them; `hash` as for add.
  std::optional<size_t> find(std::string_view key, uint64_t hash) const;

  /// Where the writer put each row's record, by position; filled by the writer only.
  std::vector<value_pointer> places;

private:
  struct row {
    uint64_t key = 0;
    uint64_t record = 0;
    uint32_t key_size = 0;
    uint32_t record_size = 0;
    bool indexed = false;
  };
  static constexpr uint32_t empty_slot = UINT32_MAX;
  std::string keys_;
  std::string records_;
  std::vector<row> rows_;
  /// Open addressing by hash: row positions, empty_slot where none; never over half full.
  std::vector<uint32_t> slots_;
  std::vector<uint64_t> hashes_;
};

} // namespace darcy::stores
