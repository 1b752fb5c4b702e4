// Deduplicates a batch's string keys before they go to the embedding service: each distinct key
// once, in the order of its first appearance, hashed once (compute::hash_key), in the key_batch
// that a lookup carries.
//
//   distinct_keys d;
//   d.clear(words.size());
//   for (auto& w : words)
//     positions.push_back(d.add(w));   // row of w in the lookup's answer
//   table_lookup t{&config, config.name, {}, d.take()};
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "messages/embedding/key_batch.hpp"

namespace darcy::ops {

class distinct_keys {
public:
  /// Forgets every key. `expected` is how many add() calls follow (a sizing hint only).
  void clear(size_t expected = 0);

  /// The position of `key` among the distinct keys, in order of first appearance; a new key is
  /// appended.
  uint32_t add(std::string_view key);

  /// As add(std::to_string(id)), but a repeated id is found by the integer alone, and only a
  /// new id is written out in decimal and hashed (once): the key stays the decimal string, so
  /// that rows saved or exported under it are found again. One batch takes either strings
  /// (add) or ids (add_id), never both.
  uint32_t add_id(uint64_t id);

  /// Distinct keys added since clear().
  size_t size() const { return batch_.size(); }

  /// The distinct keys with their hashes. Leaves this empty, as clear() does.
  key_batch take();

private:
  static constexpr uint32_t none = UINT32_MAX;
  void rehash(size_t capacity);

  key_batch batch_;
  /// Open addressing over positions in batch_; a power of two, at most half full.
  std::vector<uint32_t> slots_;
  /// add_id's ids by position in batch_, and its table over them (sized as slots_).
  std::vector<uint64_t> ids_;
  std::vector<uint32_t> id_slots_;
};

} // namespace darcy::ops
