// A batch of raw string keys as the embedding service moves it: every key's bytes in one buffer,
// offsets into it, and each key's 64-bit hash (compute::hash_key), computed once by whoever
// builds the batch and trusted by every actor that routes or stores it. On the wire it is three
// blobs (four when it counts occurrences), not one serialized string per key. Copies share one
// buffer (copy on write), so that a batch passes between actors of one process, and is kept for
// a retry, without copying keys.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/wire_blob.hpp"

namespace darcy {

class key_batch {
public:
  key_batch() = default;

  size_t size() const { return rep_ ? rep_->hashes.size() : 0; }
  bool empty() const { return size() == 0; }

  /// Bytes of all keys together.
  size_t key_bytes() const { return rep_ ? rep_->bytes.size() : 0; }

  std::string_view operator[](size_t i) const {
    auto& r = *rep_;
    return {r.bytes.data() + r.offsets[i], r.offsets[i + 1] - r.offsets[i]};
  }
  uint64_t hash(size_t i) const { return rep_->hashes[i]; }
  std::span<const uint64_t> hashes() const {
    return rep_ ? std::span<const uint64_t>{rep_->hashes} : std::span<const uint64_t>{};
  }

  /// Views of the keys, valid while this batch (or a copy of it) lives unchanged.
  std::vector<std::string_view> views() const {
    std::vector<std::string_view> result;
    result.reserve(size());
    for (size_t i = 0; i < size(); ++i)
      result.push_back((*this)[i]);
    return result;
  }

  /// Appends `key`; `hash` must be compute::hash_key(key).
  void push_back(std::string_view key, uint64_t hash) {
    auto& r = mut();
    if (r.offsets.empty())
      r.offsets.push_back(0);
    r.bytes.append(key);
    r.offsets.push_back(r.bytes.size());
    r.hashes.push_back(hash);
    if (!r.counts.empty())
      r.counts.push_back(1);
  }
  /// Appends `key` as occurring `count` times in the caller's input: a lookup counts its row's
  /// frequency that many times (0: a key the caller reads without it being input, such as a
  /// negative the sampler drew).
  void push_back(std::string_view key, uint64_t hash, uint32_t count) {
    push_back(key, hash);
    if (count != 1) {
      auto& r = mut();
      if (r.counts.empty())
        r.counts.assign(r.hashes.size(), 1);
      r.counts.back() = count;
    }
  }

  /// Whether some key occurs other than once (counts() is then one count per key).
  bool counted() const { return rep_ && !rep_->counts.empty(); }
  /// The occurrences of key i: 1 unless the batch counts occurrences.
  uint32_t count(size_t i) const { return counted() ? rep_->counts[i] : 1; }
  /// One count per key, or nothing when every key occurs once.
  std::span<const uint32_t> counts() const {
    return counted() ? std::span<const uint32_t>{rep_->counts} : std::span<const uint32_t>{};
  }
  /// Key i occurs `more` times more (the sum saturates at UINT32_MAX).
  void add_count(size_t i, uint32_t more) {
    if (more == 0)
      return;
    auto& r = mut();
    if (r.counts.empty())
      r.counts.assign(r.hashes.size(), 1);
    r.counts[i] = r.counts[i] > UINT32_MAX - more ? UINT32_MAX : r.counts[i] + more;
  }

  void reserve(size_t keys, size_t bytes) {
    auto& r = mut();
    r.offsets.reserve(keys + 1);
    r.hashes.reserve(keys);
    r.bytes.reserve(bytes);
  }

  friend bool operator==(const key_batch& a, const key_batch& b) {
    if (a.empty() || b.empty())
      return a.empty() == b.empty();
    return a.rep_->bytes == b.rep_->bytes && a.rep_->offsets == b.rep_->offsets &&
           a.rep_->hashes == b.rep_->hashes && a.counts().size() == b.counts().size() &&
           std::equal(a.counts().begin(), a.counts().end(), b.counts().begin());
  }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, key_batch& x) {
    if constexpr (wire::is_serializer<Inspector>) {
      static const rep none;
      auto& r = x.rep_ ? *x.rep_ : none;
      auto order = wire::host_order();
      return caf::error::eval([&] { return f(order); },
                              [&] { return wire::save(f, r.bytes.data(), r.bytes.size()); },
                              [&] { return wire::save(f, r.offsets.data(), r.offsets.size()); },
                              [&] { return wire::save(f, r.hashes.data(), r.hashes.size()); },
                              [&] { return wire::save(f, r.counts.data(), r.counts.size()); });
    } else if constexpr (wire::is_deserializer<Inspector>) {
      uint8_t order = 0;
      auto r = std::make_shared<rep>();
      auto err =
        caf::error::eval([&] { return f(order); }, [&] { return wire::load(f, r->bytes, order); },
                         [&] { return wire::load(f, r->offsets, order); },
                         [&] { return wire::load(f, r->hashes, order); },
                         [&] { return wire::load(f, r->counts, order); });
      if (err)
        return err;
      if (auto bad = validate(*r))
        return bad;
      x.rep_ = std::move(r);
      return caf::error{};
    } else {
      static const rep none;
      auto& r = x.rep_ ? *x.rep_ : none;
      return f(caf::meta::type_name("key_batch"), r.bytes, r.offsets);
    }
  }

private:
  struct rep {
    std::string bytes;
    /// size() + 1 entries once a key is in; key i is bytes[offsets[i], offsets[i + 1]).
    std::vector<uint64_t> offsets;
    std::vector<uint64_t> hashes;
    /// Empty, or one count per key.
    std::vector<uint32_t> counts;
  };

  rep& mut() {
    if (!rep_)
      rep_ = std::make_shared<rep>();
    else if (rep_.use_count() > 1)
      rep_ = std::make_shared<rep>(*rep_);
    return *rep_;
  }

  /// A batch read from the wire must describe its own bytes: offsets start at 0, never go
  /// down, end at the byte count, and there is one hash per key, and no count or one count
  /// per key.
  static caf::error validate(const rep& r) {
    if (r.offsets.empty() && r.hashes.empty() && r.bytes.empty() && r.counts.empty())
      return {};
    bool ok = r.offsets.size() == r.hashes.size() + 1 && r.offsets.front() == 0 &&
              r.offsets.back() == r.bytes.size() &&
              (r.counts.empty() || r.counts.size() == r.hashes.size());
    for (size_t i = 1; ok && i < r.offsets.size(); ++i)
      ok = r.offsets[i - 1] <= r.offsets[i];
    return ok ? caf::error{} : caf::make_error(caf::sec::invalid_argument, "malformed key_batch");
  }

  std::shared_ptr<rep> rep_;
};

} // namespace darcy
