// Where every record of the LevelDB tier's value log lies, held in memory: key hash -> the
// record's place, about 10 bytes a row. A row that is not in the memory tier is then found with
// one read of the log, and a key the store never wrote with none: LevelDB is not asked. The
// store keeps it complete: it inserts or replaces the place of every record it writes and
// erases the place of every row it removes.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "stores/embedding/value_log.hpp"

namespace darcy::stores {

/// A hash table of 8-byte entries in 64 partitions, each an open-addressed Robin Hood table
/// that grows by a quarter past 90% full. The hash is mixed first: a shard's keys share the
/// top bits of theirs (compute::shard_of_hash). An entry keeps 29 bits of the mixed hash, the
/// record's generation (as one of 7 above the oldest the log holds) and its offset (below 2^32);
/// its length follows from the key's (value_log::record_length). A place an entry cannot hold sits
/// in a side table with its whole hash instead.
///
/// find() may answer places of other keys whose hashes share the bits kept (about one in 10^8
/// per find at a million rows): the caller tells them apart by the record's key, which
/// value_log::read checks. Two places are the same when their generation and offset are.
class pointer_index {
public:
  /// The bits of a hash an entry keeps, besides those of its partition.
  static constexpr int tag_bits = 29;

  /// `record_bytes`: the bytes of a row's record in this store (row_record_bytes);
  /// `oldest_generation`: the oldest generation the log holds. An entry keeps the top
  /// `kept_tag_bits` (1 to 29) of its tag: fewer only for tests, where many hashes then agree.
  pointer_index(uint32_t record_bytes, uint32_t oldest_generation, int kept_tag_bits = tag_bits);

  /// Appends to `out` (cleared first) the places held for hashes that agree with `hash` in
  /// the bits kept, as they would be for a key of `key_bytes` bytes.
  void find(uint64_t hash, size_t key_bytes, std::vector<value_pointer>& out) const;
  /// Hints that find, replace or insert will soon look for `hash`: its home slot is fetched.
  void prefetch(uint64_t hash) const {
    hash = mixed(hash);
    auto& p = partition_of(hash);
    if (!p.slots.empty())
      __builtin_prefetch(&p.slots[home(tag_of_hash(hash), p.slots.size())]);
  }
  /// Holds `at` for `hash`, a record of a key of `key_bytes` bytes. The caller must erase or
  /// replace what it held for the same key.
  void insert(uint64_t hash, size_t key_bytes, const value_pointer& at);
  /// Replaces the place `was` held for `hash` by `at` (the same key's newer record); false,
  /// with nothing changed, when `was` is not held for `hash`.
  bool replace(uint64_t hash, size_t key_bytes, const value_pointer& was, const value_pointer& at);
  /// Whether `at` is held for `hash` (for it or for a hash that agrees with it in the bits kept).
  bool holds(uint64_t hash, const value_pointer& at) const;
  /// Forgets the place `at` held for `hash`; false when it is not held.
  bool erase(uint64_t hash, const value_pointer& at);
  /// The log no longer holds generations below `generation`: no place held may name one.
  void drop_generations_below(uint32_t generation);

  /// Whether find() of `a` may answer places held for `b`: they agree in the bits kept.
  bool agree(uint64_t a, uint64_t b) const {
    a = mixed(a);
    b = mixed(b);
    return (a & (partition_count - 1)) == (b & (partition_count - 1)) &&
           tag_of_hash(a) == tag_of_hash(b);
  }

  /// Places held, and the bytes the index takes in memory.
  uint64_t size() const { return size_; }
  uint64_t bytes() const;
  /// Places held in the side table (their generation or offset past what an entry holds).
  uint64_t side_size() const { return side_.size(); }

private:
  static constexpr int partition_bits = 6;
  /// Generations an entry tells apart; code 0 marks a free slot.
  static constexpr uint32_t generation_codes = 7;

  struct partition {
    /// Entries: tag (high 29 bits), generation code (3), offset (low 32); 0 when free.
    std::vector<uint64_t> slots;
    size_t used = 0;
  };

  /// The splitmix64 finalizer: every bit of a hash moves every bit of the result.
  static uint64_t mixed(uint64_t hash) {
    hash = (hash ^ (hash >> 30)) * 0xbf58'476d'1ce4'e5b9;
    hash = (hash ^ (hash >> 27)) * 0x94d0'49bb'1331'11eb;
    return hash ^ (hash >> 31);
  }
  /// Of a mixed hash, as are the partition_of's.
  uint32_t tag_of_hash(uint64_t hash) const {
    return static_cast<uint32_t>(hash >> 35) & tag_mask_;
  }
  static uint32_t tag_of(uint64_t entry) { return static_cast<uint32_t>(entry >> 35); }
  partition& partition_of(uint64_t hash) { return partitions_[hash & (partition_count - 1)]; }
  const partition& partition_of(uint64_t hash) const {
    return partitions_[hash & (partition_count - 1)];
  }
  /// The slot a tag's entry would take in a table of `size` slots with no collision; tags in
  /// order have homes in order.
  static size_t home(uint32_t tag, size_t size) {
    return static_cast<size_t>((uint64_t{tag} * size) >> tag_bits);
  }
  /// The entry that holds `at` for `tag` (its length aside), or 0 when none can.
  uint64_t entry_of(uint32_t tag, const value_pointer& at) const;
  value_pointer decode(uint64_t entry, size_t key_bytes) const;
  /// The slot of `p` holding an entry equal to `entry`, or SIZE_MAX.
  static size_t slot_of(const partition& p, uint64_t entry);
  static void place(partition& p, uint64_t entry);
  static void remove_at(partition& p, size_t slot);
  static void grow(partition& p);

  static constexpr size_t partition_count = size_t{1} << partition_bits;
  std::vector<partition> partitions_;
  /// Places no entry can hold, by whole hash.
  std::unordered_multimap<uint64_t, value_pointer> side_;
  uint32_t tag_mask_ = 0;
  uint32_t record_bytes_ = 0;
  uint32_t base_generation_ = 0;
  uint64_t size_ = 0;
};

} // namespace darcy::stores
