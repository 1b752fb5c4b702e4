// Where the LevelDB tier's rows lie in their value log, for as many keys as a byte budget holds:
// the tier between the rows in memory and LevelDB's own pointers. A row that leaves the memory
// tier leaves its record's place here, 16 bytes against the hundreds its row takes, so that
// reading it back costs one read of the log and no LevelDB lookup.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "stores/embedding/huge_pages.hpp"
#include "stores/embedding/value_log.hpp"

namespace darcy::stores {

/// A set-associative table by key hash: buckets of 4 entries (one cache line), the most
/// recently put first; a put into a full bucket drops its least recently put entry. An entry
/// holds 32 bits of the hash, so a find may answer another key's place (about one find in 10^9
/// of a key it does not hold): the caller checks the record's key (value_log::read does).
class pointer_cache {
public:
  /// Entries for `bytes` (rounded down to a power of two of buckets); none below one bucket.
  explicit pointer_cache(uint64_t bytes);

  /// The place last put for `hash`, unless dropped or erased since.
  std::optional<value_pointer> find(uint64_t hash) const;
  /// Records `at` for `hash`. A place past what an entry holds (an offset of 2^40 bytes or more,
  /// a record of 2^24 bytes or more) is not recorded, and erases what was.
  void put(uint64_t hash, const value_pointer& at);
  void erase(uint64_t hash);

  /// Entries in use, and what the table takes in memory.
  uint64_t size() const { return size_; }
  uint64_t bytes() const { return buckets_.size() * sizeof(bucket); }

private:
  static constexpr int ways = 4;
  struct entry {
    /// High half: the hash's upper 32 bits; low half: the generation.
    uint64_t tag_generation = 0;
    /// High 40 bits: the offset; low 24: the length (0: the entry is free).
    uint64_t offset_length = 0;
  };
  /// 64 bytes: one cache line in a table of 2 MiB or more, whose mapping is aligned
  /// (huge_pages); a smaller table comes from malloc, aligned to 16 bytes only.
  struct bucket {
    entry ways[pointer_cache::ways];
  };
  static_assert(sizeof(bucket) == 64);

  /// The bits of a hash an entry keeps: the upper half (the bucket is chosen by the lower).
  static uint64_t hash_tag(uint64_t hash) { return hash >> 32; }
  bucket& bucket_of(uint64_t hash) { return buckets_[hash & mask_]; }
  const bucket& bucket_of(uint64_t hash) const { return buckets_[hash & mask_]; }
  /// The way of `b` holding `hash`'s tag, or -1.
  static int way_of(const bucket& b, uint64_t hash);

  std::vector<bucket, huge_page_allocator<bucket>> buckets_;
  uint64_t mask_ = 0;
  uint64_t size_ = 0;
};

} // namespace darcy::stores
