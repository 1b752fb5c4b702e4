#include "stores/embedding/pointer_index.hpp"

#include <algorithm>
#include <utility>

namespace darcy::stores {

namespace {

constexpr uint64_t offset_mask = 0xffff'ffff;

} // namespace

pointer_index::pointer_index(uint32_t record_bytes, uint32_t oldest_generation, int kept_tag_bits)
  : partitions_(partition_count),
    tag_mask_(((1u << tag_bits) - 1) >> (tag_bits - std::clamp(kept_tag_bits, 1, tag_bits))
                                          << (tag_bits - std::clamp(kept_tag_bits, 1, tag_bits))),
    record_bytes_(record_bytes),
    base_generation_(oldest_generation) {
}

uint64_t pointer_index::entry_of(uint32_t tag, const value_pointer& at) const {
  if (at.generation < base_generation_ || at.generation - base_generation_ >= generation_codes ||
      at.offset > offset_mask)
    return 0;
  return uint64_t{tag} << 35 | uint64_t{at.generation - base_generation_ + 1} << 32 | at.offset;
}

value_pointer pointer_index::decode(uint64_t entry, size_t key_bytes) const {
  return {.generation = base_generation_ + static_cast<uint32_t>(entry >> 32 & 7) - 1,
          .offset = entry & offset_mask,
          .length = value_log::record_length(key_bytes, record_bytes_)};
}

namespace {

/// How far `slot` lies past `home`.
size_t distance(size_t slot, size_t home, size_t size) {
  return slot >= home ? slot - home : slot + size - home;
}

} // namespace

void pointer_index::find(uint64_t hash, size_t key_bytes, std::vector<value_pointer>& out) const {
  out.clear();
  hash = mixed(hash);
  auto& p = partition_of(hash);
  auto n = p.slots.size();
  if (n > 0) {
    auto tag = tag_of_hash(hash);
    auto slot = home(tag, n);
    // Robin Hood order: past an entry nearer its home than `tag`'s would be, none is `tag`'s.
    for (size_t d = 0;; ++d) {
      auto e = p.slots[slot];
      if (e == 0 || distance(slot, home(tag_of(e), n), n) < d)
        break;
      if (tag_of(e) == tag)
        out.push_back(decode(e, key_bytes));
      slot = slot + 1 == n ? 0 : slot + 1;
    }
  }
  if (!side_.empty()) {
    auto [first, last] = side_.equal_range(hash);
    for (auto it = first; it != last; ++it)
      out.push_back(it->second);
  }
}

size_t pointer_index::slot_of(const partition& p, uint64_t entry) {
  auto n = p.slots.size();
  if (n == 0)
    return SIZE_MAX;
  auto slot = home(tag_of(entry), n);
  for (size_t d = 0;; ++d) {
    auto e = p.slots[slot];
    if (e == 0 || distance(slot, home(tag_of(e), n), n) < d)
      return SIZE_MAX;
    if (e == entry)
      return slot;
    slot = slot + 1 == n ? 0 : slot + 1;
  }
}

void pointer_index::place(partition& p, uint64_t entry) {
  if ((p.used + 1) * 10 > p.slots.size() * 9)
    grow(p);
  auto n = p.slots.size();
  auto slot = home(tag_of(entry), n);
  for (size_t d = 0;; ++d) {
    auto& e = p.slots[slot];
    if (e == 0) {
      e = entry;
      ++p.used;
      return;
    }
    // The entry nearer its home gives way and goes on looking for a slot.
    if (auto ed = distance(slot, home(tag_of(e), n), n); ed < d) {
      std::swap(e, entry);
      d = ed;
    }
    slot = slot + 1 == n ? 0 : slot + 1;
  }
}

void pointer_index::remove_at(partition& p, size_t slot) {
  auto n = p.slots.size();
  // Backward shift: the entries after it that are not at home move one slot nearer.
  for (;;) {
    auto next = slot + 1 == n ? 0 : slot + 1;
    auto e = p.slots[next];
    if (e == 0 || home(tag_of(e), n) == next)
      break;
    p.slots[slot] = e;
    slot = next;
  }
  p.slots[slot] = 0;
  --p.used;
}

void pointer_index::grow(partition& p) {
  auto old = std::move(p.slots);
  p.slots.assign(std::max<size_t>(16, old.size() + old.size() / 4), 0);
  p.used = 0;
  for (auto e : old)
    if (e != 0)
      place(p, e);
}

void pointer_index::insert(uint64_t hash, size_t key_bytes, const value_pointer& at) {
  hash = mixed(hash);
  auto e = at.length == value_log::record_length(key_bytes, record_bytes_)
             ? entry_of(tag_of_hash(hash), at)
             : 0;
  if (e != 0)
    place(partition_of(hash), e);
  else
    side_.emplace(hash, at);
  ++size_;
}

bool pointer_index::replace(uint64_t hash, size_t key_bytes, const value_pointer& was,
                            const value_pointer& at) {
  if (!erase(hash, was))
    return false;
  insert(hash, key_bytes, at);
  return true;
}

bool pointer_index::holds(uint64_t hash, const value_pointer& at) const {
  hash = mixed(hash);
  if (auto entry = entry_of(tag_of_hash(hash), at);
      entry != 0 && slot_of(partition_of(hash), entry) != SIZE_MAX)
    return true;
  auto [first, last] = side_.equal_range(hash);
  return std::any_of(first, last, [&](auto& held) {
    return held.second.generation == at.generation && held.second.offset == at.offset;
  });
}

bool pointer_index::erase(uint64_t hash, const value_pointer& at) {
  hash = mixed(hash);
  if (auto entry = entry_of(tag_of_hash(hash), at); entry != 0) {
    auto& p = partition_of(hash);
    if (auto slot = slot_of(p, entry); slot != SIZE_MAX) {
      remove_at(p, slot);
      --size_;
      return true;
    }
  }
  auto [first, last] = side_.equal_range(hash);
  for (auto it = first; it != last; ++it)
    if (it->second.generation == at.generation && it->second.offset == at.offset) {
      side_.erase(it);
      --size_;
      return true;
    }
  return false;
}

void pointer_index::drop_generations_below(uint32_t generation) {
  if (generation <= base_generation_)
    return;
  auto shift = generation - base_generation_;
  for (auto& p : partitions_) {
    // A code moves down by `shift`; an entry of a dropped generation (whose record is gone
    // with its file) goes, and the others are placed anew.
    bool dropped = false;
    for (auto& e : p.slots) {
      if (e == 0)
        continue;
      auto code = static_cast<uint32_t>(e >> 32 & 7);
      if (code <= shift) {
        e = 0;
        dropped = true;
        --size_;
        continue;
      }
      e = (e & ~(uint64_t{7} << 32)) | uint64_t{code - shift} << 32;
    }
    if (dropped) {
      auto old = std::move(p.slots);
      p.slots.assign(old.size(), 0);
      p.used = 0;
      for (auto e : old)
        if (e != 0)
          place(p, e);
    }
  }
  for (auto it = side_.begin(); it != side_.end();) {
    if (it->second.generation < generation) {
      it = side_.erase(it);
      --size_;
    } else {
      ++it;
    }
  }
  base_generation_ = generation;
}

uint64_t pointer_index::bytes() const {
  uint64_t total = partitions_.capacity() * sizeof(partition);
  for (auto& p : partitions_)
    total += p.slots.capacity() * sizeof(uint64_t);
  // A node of the side table: its pair, a next pointer and the cached hash.
  total += side_.size() * (sizeof(std::pair<const uint64_t, value_pointer>) + 16) +
           side_.bucket_count() * sizeof(void*);
  return total;
}

} // namespace darcy::stores
