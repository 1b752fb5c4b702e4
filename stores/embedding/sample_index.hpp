// The sampling index of one store: every row's key grouped by frequency class
// (compute::frequency_class), with the store's total unigram weight, kept current by the store
// as it creates, counts, imports and removes rows, so that a draw of n negatives costs about n
// steps and a class histogram, never a pass over the rows.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <caf/expected.hpp>

#include "compute/sampler.hpp"
#include "messages/embedding/embedding_interfaces.hpp"

namespace darcy::stores {

/// The exact frequency of a row of the store: `key` and the frequency the index holds for it
/// (exact for the classes, and exact itself unless the store counted the row since).
using frequency_reader = std::function<uint64_t(std::string_view key, uint64_t stored)>;

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

  size_t size() const { return by_key_.size(); }
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
  struct slot {
    const std::string* key = nullptr;
    uint64_t frequency = 0;
    uint32_t cls = 0;
    /// Position in classes_[cls].
    uint32_t pos = 0;
  };
  struct key_hash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const noexcept {
      return std::hash<std::string_view>{}(key);
    }
  };

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
  /// Keys and their slots; a node's key never moves, so slots point at it.
  std::unordered_map<std::string, uint32_t, key_hash, std::equal_to<>> by_key_;
  std::vector<slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::array<std::vector<uint32_t>, compute::frequency_class_count> classes_;
  /// frequency^power for the frequencies below its size, so that counting costs no pow().
  std::vector<double> small_powers_;
  double unigram_weight_ = 0;
};

} // namespace darcy::stores
