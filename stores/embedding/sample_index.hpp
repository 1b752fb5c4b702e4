// The sampling index of one store: every row's key grouped by frequency class
// (compute::frequency_class), with the store's total unigram weight, kept current by the store
// as it creates, counts, imports and removes rows, so that a draw of n negatives costs about n
// steps and a class histogram, never a pass over the rows.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "compute/sampler.hpp"
#include "messages/embedding/embedding_interfaces.hpp"
#include "stores/embedding/huge_pages.hpp"

namespace darcy::stores {

/// The exact frequency of a row of the store: `key` and the frequency the index holds for it
/// (exact for the classes, and exact itself unless the store counted the row since).
using frequency_reader = std::function<uint64_t(std::string_view key, uint64_t stored)>;

/// Where a store keeps a row outside memory (a value log's record), as the store records it
/// beside the row's sampling metadata; length 0 when not recorded.
struct row_locator {
  uint64_t offset = 0;
  uint32_t generation = 0;
  uint32_t length = 0;
};

class sample_index {
public:
  explicit sample_index(sampler_config cfg);

  // The store calls these as its rows change; `exact` reads a row's frequency in the store
  // as it is at the call.

  /// Inserts `key` with `frequency`, or sets the frequency of a key it holds (whose exact
  /// frequency until now `exact` reads: call it before the store changes the row).
  void set(std::string_view key, uint64_t frequency, const frequency_reader& exact);
  /// For a row whose frequency the store stops counting (it leaves a cache): the index then
  /// holds its exact frequency. Nothing when absent.
  void refresh(std::string_view key, uint64_t frequency);
  /// `times` more lookups of `key`, a row it holds whose frequency was `before`. Finds the key
  /// only when the row changes class (a few times per doubling of its frequency).
  void counted(std::string_view key, uint64_t before, uint32_t times = 1);
  /// Forgets `key` (nothing when absent); call it while the store still holds the row.
  void remove(std::string_view key, const frequency_reader& exact);

  /// Records where the store keeps `key`'s row (nothing when absent); the store must record
  /// every later move of the row, or none at all.
  void locate(std::string_view key, const row_locator& at);
  /// The location last recorded for `key`: length 0 when none is, or the key is absent.
  row_locator location(std::string_view key) const;
  /// location() of each of `keys` into `out` (one per key), fetching the index's entries for
  /// several keys at a time.
  void locations(std::span<const std::string_view> keys, std::span<row_locator> out) const;

  size_t size() const { return size_; }
  /// The frequency held for `key`: exact at its last put or change of class.
  std::optional<uint64_t> stored_frequency(std::string_view key) const;

  /// This store's part of the sampling metadata: its rows per class, its unigram weight, and
  /// those of `positives` it holds with their exact frequencies (read through `exact`).
  sample_stats stats(const std::vector<std::string>& positives,
                     const frequency_reader& exact) const;

  /// Draws plan.count rows with replacement by the plan's weights, none of plan.positives;
  /// unigram weights are read exactly through `exact` (a draw within a class is accepted with
  /// its weight over the class's bound). Deterministic for a seed and the same index. Fails
  /// with errc::invalid_argument when no row can be drawn.
  caf::expected<sample_result> draw(const sample_plan& plan, const frequency_reader& exact) const;

private:
  static constexpr uint32_t no_slot = UINT32_MAX;
  /// A class number no row has: the mark of a free slot.
  static constexpr uint32_t free_class = UINT32_MAX;
  struct slot {
    /// Short keys sit in the slot itself (the string's own buffer), so that a draw reads one
    /// slot after the class's member array.
    std::string key;
    uint64_t frequency = 0;
    uint32_t cls = free_class;
    /// Position in classes_[cls].
    uint32_t pos = 0;
    row_locator at;
  };
  /// An entry of the key index: the low 32 bits of the key's hash (whose low bits are also its
  /// home position) and its slot.
  struct entry {
    uint32_t tag = 0;
    uint32_t id = no_slot;
  };

  static constexpr size_t not_found = SIZE_MAX;

  /// The position in table_ of `key` (hash `h`), or not_found.
  size_t find(std::string_view key, uint64_t h) const;
  uint32_t find_id(std::string_view key) const;
  /// find_id of each of `keys` into `out` (one per key), the index's entries of several keys
  /// fetched at a time.
  void find_ids(std::span<const std::string_view> keys, std::span<uint32_t> out) const;
  /// Files slot `id` (whose key hashes to `h`) in table_, growing it first when half full.
  void insert_entry(uint64_t h, uint32_t id);
  /// Empties table_'s position `pos` by shifting its cluster back (no tombstones).
  void erase_entry(size_t pos);
  void grow_table();

  /// A class of one frequency (those below 8): the frequency held for its rows is exact, as
  /// every count moves a row out of it.
  static bool single_frequency(uint32_t cls);
  double unigram(uint64_t frequency) const;
  /// Sets the frequency held for slot `id`, moving it to the class of `frequency`.
  void place(uint32_t id, uint64_t frequency);
  void link(uint32_t id, uint32_t cls);
  void unlink(uint32_t id);
  /// Draws from every row but the positives by their exact weights (the way out when the
  /// positives hold nearly all the weight).
  caf::error draw_exhaustive(const sample_plan& plan, const compute::row_weights& weights,
                             const frequency_reader& exact, size_t count, std::mt19937_64& rng,
                             sample_result& out) const;

  sampler_config cfg_;
  /// Open addressing with linear probing over the keys' hashes; a power of two in size, at
  /// most half full (empty until the first row).
  std::vector<entry, huge_page_allocator<entry>> table_;
  std::vector<slot, huge_page_allocator<slot>> slots_;
  std::vector<uint32_t> free_slots_;
  size_t size_ = 0;
  std::array<std::vector<uint32_t, huge_page_allocator<uint32_t>>, compute::frequency_class_count>
    classes_;
  /// frequency^power for the frequencies below its size, so that counting costs no pow().
  std::vector<double> small_powers_;
  double unigram_weight_ = 0;
};

} // namespace darcy::stores
