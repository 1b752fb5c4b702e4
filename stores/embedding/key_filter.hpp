// A filter of the keys a backend holds, so that a store asks its backend only for keys it may
// hold: a key never added is reported absent (a Bloom filter's false positives aside, about 1
// in 100), a key added is always reported present. It grows with its keys, in layers of four
// times the last one's capacity, and never forgets one (a removed key stays a false positive).
#pragma once

#include <cstdint>
#include <vector>

namespace darcy::stores {

class key_filter {
public:
  /// The first layer holds `first_capacity` keys (at least 1024) at about 10 bits a key.
  explicit key_filter(uint64_t first_capacity = 1 << 16);

  /// `hash` is compute::hash_key of the key.
  void add(uint64_t hash);
  /// False only for a key never added.
  bool may_contain(uint64_t hash) const;

  uint64_t keys() const { return keys_; }
  uint64_t bytes() const;

private:
  /// 512-bit blocks: a key's 7 bits are all in one cache line.
  struct layer {
    std::vector<uint64_t> words;
    uint64_t capacity = 0;
    uint64_t keys = 0;
  };
  void add_layer(uint64_t capacity);

  std::vector<layer> layers_;
  uint64_t keys_ = 0;
};

} // namespace darcy::stores
