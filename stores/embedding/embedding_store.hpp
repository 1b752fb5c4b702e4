// The embedding store interface: rows addressed by raw string keys, no dictionary. A store owns
// the rows of one embedding on one shard, with their optimizer slots and sampling metadata.
// Stores are not thread-safe: one shard actor owns each store.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "messages/embedding/embedding_interfaces.hpp"
#include "stores/embedding/sample_index.hpp"

namespace darcy::stores {

using store_stats = embedding_stats;

class indexed_store;

/// A row with its whole state, as checkpoints save and restore it.
struct row_record {
  std::string_view key;
  std::span<const float> values;
  std::span<const float> slots;
  uint64_t frequency = 0;
  uint64_t updates = 0;
  int64_t last_update = 0;
};

class embedding_store {
public:
  virtual ~embedding_store() = default;

  virtual size_t dim() const = 0;

  /// Writes one row per key into `out` (keys.size() * dim floats, row-major). A missing key is
  /// created from the initializer; in read-only mode it reads its initial vector instead and the
  /// store does not grow. Fails with errc::dimension_mismatch when `out` has the wrong size.
  /// hashes[k] is compute::hash_key(keys[k]), computed once by the caller on the key's way
  /// through the service; `hashes` must hold one hash per key, of that function.
  virtual caf::error lookup(std::span<const std::string_view> keys,
                            std::span<const uint64_t> hashes, std::span<float> out) = 0;

  /// Applies one gradient row per key with the configured optimizer; `step` is the global
  /// training step (for TTL eviction). `keys` must be deduplicated by the caller; `hashes` as
  /// for lookup. Fails, with no row changed, on a size mismatch (errc::dimension_mismatch), a
  /// NaN or Inf gradient (errc::non_finite), or in read-only mode (errc::read_only).
  virtual caf::error update(std::span<const std::string_view> keys,
                            std::span<const uint64_t> hashes, std::span<const float> grads,
                            int64_t step) = 0;

  /// As lookup, with the row of keys[k] counted as looked up counts[k] times in its frequency
  /// (the key occurred that often in the caller's batch; lookup alone counts each key once).
  /// A count of 0 reads the row (creating it when missing) and leaves its frequency, and a
  /// tier's copy of it, as they were: a key the caller reads but was not given, such as a
  /// sampled negative. `counts` holds one count per key, or nothing (each key once); otherwise
  /// errc::invalid_argument and nothing changes. Admission still sees one sighting per key.
  caf::error lookup(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<const uint32_t> counts, std::span<float> out);

  /// Brings the rows of `keys` that the store keeps outside memory into its memory tier ahead
  /// of the lookup that will ask for them (the trainer's look-ahead), and keeps them there
  /// until that lookup, or for the next pinned_lookups lookups at most. Creates no row, counts
  /// no lookup and changes no value: a store read after it answers as one never prefetched.
  /// A hint: a store without a memory tier (the default) does nothing, and one whose pinned
  /// rows already fill half its tier passes the rest over. `hashes` as for lookup; otherwise
  /// errc::dimension_mismatch and nothing changes.
  virtual caf::error prefetch(std::span<const std::string_view> keys,
                              std::span<const uint64_t> hashes);
  /// Lookups after a prefetch within which its rows are not evicted.
  static constexpr uint64_t pinned_lookups = 256;

  /// lookup and update for a caller that has not hashed the keys.
  caf::error lookup(std::span<const std::string_view> keys, std::span<float> out);
  caf::error update(std::span<const std::string_view> keys, std::span<const float> grads,
                    int64_t step);

  virtual store_stats stats() const = 0;

  /// Calls f(key, values) for every row, in no particular order; f must not change the store.
  /// Fails (errc::io_error) only for a backend whose rows live elsewhere and cannot be read:
  /// the rows seen by then are then not all rows.
  virtual caf::error scan(
    const std::function<void(std::string_view, std::span<const float>)>& f) = 0;

  /// Floats of a row's update-rule state, its slots (compute::bound_rule::slot_floats).
  virtual size_t slot_floats() const = 0;

  /// Calls f for every row with its whole state; f must not change the store. Fails as scan.
  virtual caf::error export_rows(const std::function<void(const row_record&)>& f) = 0;

  /// Inserts or replaces a row with its whole state, bypassing admission and read-only mode
  /// (this is the restore path; the service refuses user imports in read-only mode). Fails
  /// with errc::dimension_mismatch when the sizes disagree with the store.
  virtual caf::error import_row(const row_record& row) = 0;

  /// Calls found(row) with the whole state of each of `keys` that has a row, and missing(key)
  /// for each that has none; creates no row and counts no lookup. `keys` must be deduplicated
  /// by the caller. The default scans every row (export_rows); a store that finds a row by
  /// its key overrides it. Fails as export_rows.
  virtual caf::error export_keys(std::span<const std::string_view> keys,
                                 const std::function<void(const row_record&)>& found,
                                 const std::function<void(std::string_view)>& missing);

  /// Removes the rows of `keys` (those it holds), as a sync from training deletes evicted
  /// rows. errc::unsupported for a store that cannot (the default).
  virtual caf::error remove_rows(std::span<const std::string_view> keys);

  /// `f` is called with the key of every row the store removes by itself (eviction), inside
  /// the lookup or update that evicts it; the store must not be used from `f`.
  void set_erase_observer(std::function<void(std::string_view)> f) {
    erase_observer_ = std::move(f);
  }

  /// The store's ANN index (de_config::ann), through any store in front of it; nullptr when
  /// it keeps none.
  virtual indexed_store* ann() { return nullptr; }

  // -- operations built on the row primitives -------------------------------------------------

  /// Sampling metadata (sample_stats): rows per frequency class, their weight, and the
  /// frequencies of those of `positives` that are stored here. The first sampling call builds
  /// the store's sampling index from export_rows (one pass over the rows); the store keeps it
  /// current after that, so that later calls cost the classes and the positives.
  virtual caf::expected<sample_stats> sample_metadata(const std::vector<std::string>& positives);

  /// Draws plan.count rows with replacement, none of them in plan.positives, by the plan's
  /// weights; probs are weight / plan.total_weight. Costs about plan.count steps once the
  /// index is built (see sample_index::draw). Fails with errc::invalid_argument when no row
  /// can be drawn.
  virtual caf::expected<sample_result> sample(const sample_plan& plan);

  /// Writes every row, with its whole state, to `out` as one Cap'n Proto ShardFile message
  /// (schema: messages/checkpoint.capnp).
  caf::error export_to(std::ostream& out, const std::string& name);

  /// Imports every row of a ShardFile message from `in`; errc::corrupt_file when the stream is
  /// truncated or malformed, errc::dimension_mismatch when it holds rows of another dim.
  caf::error import_from(std::istream& in);

protected:
  /// Subclasses call it for every row they evict (after sampling_remove).
  void erased(std::string_view key) {
    if (erase_observer_)
      erase_observer_(key);
  }

  /// During a counted lookup: the times to count key k of its keys; 1 otherwise.
  uint32_t lookup_count(size_t k) const { return counts_.empty() ? 1 : counts_[k]; }
  /// During a counted lookup its counts, otherwise nothing: what a store in front of another
  /// passes on with the keys.
  std::span<const uint32_t> lookup_counts() const { return counts_; }

  /// The sampler the sampling index weighs unigram rows with; subclasses set it at
  /// construction from their table's config.
  void set_sampler(sampler_config cfg) { sampler_ = cfg; }

  // Hooks that keep the sampling index current once it exists (see sample_index): a subclass
  // calls them for every row it creates or imports (sampling_set, before it changes the row),
  // every lookup it counts (sampling_counted, with the frequency before), every row that leaves
  // its cache (sampling_refresh) and every row it removes (sampling_remove, while it still holds
  // the row), eviction included.
  void sampling_set(std::string_view key, uint64_t frequency) {
    if (sampling_)
      sampling_->set(key, frequency, exact_reader());
  }
  void sampling_refresh(std::string_view key, uint64_t frequency) {
    if (sampling_)
      sampling_->refresh(key, frequency);
  }
  void sampling_counted(std::string_view key, uint64_t before, uint32_t times = 1) {
    if (sampling_)
      sampling_->counted(key, before, times);
  }
  void sampling_remove(std::string_view key) {
    if (sampling_)
      sampling_->remove(key, exact_reader());
  }
  /// Where the row of `key` lies outside memory, kept in the sampling index for a store that
  /// records every move of its rows (sample_index::locate).
  void sampling_locate(std::string_view key, const row_locator& at) {
    if (sampling_)
      sampling_->locate(key, at);
  }
  /// The sampling index exists (the table has sampled since it was opened).
  bool sampling() const { return sampling_ != nullptr; }
  /// The recorded place of each of `keys` into `out` (one per key): length 0 when unknown.
  void sampling_locations(std::span<const std::string_view> keys,
                          std::span<row_locator> out) const {
    if (sampling_)
      sampling_->locations(keys, out);
    else
      std::fill(out.begin(), out.end(), row_locator{});
  }
  /// Puts every row of the store in `index` (called once, when sampling starts); the default
  /// reads them through export_rows.
  virtual caf::error fill_sampling_index(sample_index& index);
  /// The index's frequency of a row may lag behind the row's own between changes of class;
  /// a subclass answers the row's exact frequency (the default trusts the index's).
  virtual uint64_t exact_frequency(std::string_view, uint64_t stored) { return stored; }

private:
  frequency_reader exact_reader() {
    return [this](std::string_view key, uint64_t stored) { return exact_frequency(key, stored); };
  }
  /// Builds the sampling index from export_rows when there is none yet.
  caf::error ensure_sampling_index();

  std::function<void(std::string_view)> erase_observer_;
  std::span<const uint32_t> counts_;
  sampler_config sampler_;
  std::unique_ptr<sample_index> sampling_;
};

} // namespace darcy::stores
