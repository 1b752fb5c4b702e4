// An embedding store in front of another that keeps an approximate inner-product index
// (compute::mips::live_ivf) over its rows for approximate top-k. Every row a lookup creates, an
// update changes, an import writes, a removal or an eviction takes is noted with the time;
// refresh() moves noted rows into the index, oldest first and a bounded number a call, and
// search() answers from the index, re-scoring its candidates from the rows themselves.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compute/mips/live_ivf.hpp"
#include "stores/embedding/forwarding_store.hpp"

namespace darcy::stores {

class indexed_store : public forwarding_store {
public:
  using clock_type = std::chrono::steady_clock;

  /// Notes every row `inner` holds already (one pass over its keys). `cfg` as validated by
  /// validate(de_config).
  static caf::expected<std::unique_ptr<indexed_store>> open(std::unique_ptr<embedding_store> inner,
                                                            const ann_config& cfg);
  ~indexed_store() override;

  const ann_config& config() const { return cfg_; }
  indexed_store* ann() override { return this; }

  /// Indexes at most `budget` noted rows, oldest first, and moves at most `budget` rows of a
  /// retraining (compute::mips::live_ivf::step), training new lists first when they are due
  /// and `train` holds. Answers whether work remains.
  caf::expected<bool> refresh(size_t budget, bool train = true);

  /// For a refresher that trains the index's lists without holding the store: the training
  /// to run when one is due, and installing its result (false when the index trained since).
  std::optional<compute::mips::live_ivf::training_plan> due_training();
  bool install_training(const compute::mips::live_ivf::training_plan& plan,
                        compute::row_matrix centroids);
  /// Seconds the oldest noted row not yet indexed has waited (0: none).
  double oldest_pending_s() const;
  size_t backlog() const { return queue_.size(); }
  size_t indexed_rows() const { return index_.size(); }

  /// The k best rows per query under `score` among the `rerank` (at least k) best by the
  /// index, reading `probes` lists; queries as top_k takes them (dim values each, dim - 1 for
  /// inner_product_bias). The caller checks the request (check_top_k_request).
  caf::expected<top_k_result> search(const std::vector<float>& queries, uint32_t k,
                                     top_k_score score, uint32_t probes, uint32_t rerank);

  using embedding_store::lookup;
  using embedding_store::update;
  caf::error lookup(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<float> out) override;
  caf::error update(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<const float> grads, int64_t step) override;
  store_stats stats() const override;
  caf::error import_row(const row_record& row) override;
  caf::error remove_rows(std::span<const std::string_view> keys) override;

private:
  indexed_store(std::unique_ptr<embedding_store> inner, const ann_config& cfg);
  /// Marks `key` changed now, unless it waits already.
  void note(std::string_view key);
  uint32_t id_of(std::string_view key);
  void forget(std::string_view key);

  struct key_hash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const noexcept {
      return std::hash<std::string_view>{}(key);
    }
  };

  ann_config cfg_;
  compute::mips::live_ivf index_;
  /// Indexed keys and their ids in index_; keys_[id] names id (empty: free).
  std::unordered_map<std::string, uint32_t, key_hash, std::equal_to<>> ids_;
  std::vector<std::string> keys_;
  std::vector<uint32_t> free_ids_;
  /// Noted keys not yet indexed, in the order they were noted, with the time.
  std::deque<std::pair<std::string, clock_type::time_point>> queue_;
  std::unordered_set<std::string, key_hash, std::equal_to<>> waiting_;
  /// The waits of the last 4,096 rows indexed, a ring.
  std::vector<double> waits_;
  size_t next_wait_ = 0;
};

} // namespace darcy::stores
