// A mutable inverted-file index for approximate inner-product search over rows that keep
// changing, the index behind a live table's approximate top-k: each row is an int8 code of its
// direction plus its norm, filed under the nearest of a few centroids. Rows are upserted and
// removed one at a time; when the rows outgrow the lists, step() trains new ones and moves the
// rows over a chunk at a time, and a search reads both partitions meanwhile.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "compute/top_k.hpp"

namespace darcy::compute::mips {

struct live_ivf_options {
  /// Lists of a trained partition; 0: the square root of the rows at training, 8 to 4096.
  uint32_t lists = 0;
  /// Rows before the first training; until then a search reads every code.
  uint32_t train_rows = 1024;
  uint64_t seed = 1;
};

class live_ivf {
public:
  /// `dim` must be positive.
  explicit live_ivf(size_t dim, live_ivf_options o = {});

  size_t dim() const { return dim_; }
  size_t size() const { return places_size_; }
  /// Lists of the partition new rows go to (1 before the first training).
  size_t lists() const;
  /// True while rows wait to move to newly trained lists.
  bool retraining() const { return old_ >= 0; }

  /// Files row `id` (dim finite values) under its nearest list, replacing what `id` held.
  void upsert(uint32_t id, std::span<const float> row);
  /// Forgets `id`; nothing when absent.
  void remove(uint32_t id);
  bool contains(uint32_t id) const;
  /// Memory the index holds: codes, norms, scales, ids, places and centroids.
  size_t bytes() const;

  /// Retraining work, a bounded amount a call: with `may_train`, trains new lists when
  /// training_due() (k-means over a sample of at most 65,536 decoded codes); then moves at most
  /// `budget` rows to the new lists. True while rows remain to move.
  bool step(size_t budget, bool may_train = true);

  /// A training taken apart, so that its k-means can run while the index serves: the plan (a
  /// sample of the rows' directions, the lists wanted) is drawn here, trained anywhere, and
  /// installed here, unless the index trained itself since.
  struct training_plan {
    row_matrix sample;
    size_t lists = 0;
    uint64_t seed = 0;
    /// Trainings before this one, and the rows then.
    uint64_t generation = 0;
    size_t rows = 0;
  };
  /// True once the rows reach train_rows, and again whenever they grow fourfold, while no
  /// retraining is under way.
  bool training_due() const;
  /// Precondition: training_due().
  training_plan plan_training();
  /// The centroids of `plan`'s lists.
  static row_matrix train(const training_plan& plan);
  /// Starts moving the rows to `centroids` (train(plan)); false, changing nothing, when the
  /// index trained since `plan` was drawn or retrains already.
  bool install(const training_plan& plan, row_matrix centroids);

  /// The ids of the `candidates` rows that score best against `query` (dim values) by their
  /// codes, best first, reading the `probes` lists whose centroids point closest to the query
  /// in each partition. `unit`: score directions only (cosine ranking); otherwise inner
  /// products with the rows.
  std::vector<uint32_t> search(std::span<const float> query, size_t candidates, size_t probes,
                               bool unit) const;

private:
  struct list {
    std::vector<uint32_t> ids;
    std::vector<int8_t> codes;
    /// Per row: the code's scale, and the row's norm.
    std::vector<float> scales;
    std::vector<float> norms;
  };
  struct partition {
    /// Empty before training: then one list holds every row.
    row_matrix centroids;
    /// |c|^2 / 2 per centroid.
    Eigen::VectorXf half_norms;
    /// The centroids scaled to unit length, which probes are chosen by.
    row_matrix directions;
    std::vector<list> lists;
    size_t rows = 0;
  };
  struct place {
    int8_t part = -1;
    uint32_t list = 0;
    uint32_t pos = 0;
  };

  size_t nearest_list(const partition& p, const float* unit) const;
  void append(int part, uint32_t list, uint32_t id, const int8_t* code, float scale, float norm);
  /// Removes the row at `at`, moving its list's last row into its place.
  void erase(place at);
  void scan(const partition& p, const float* query, size_t probes, bool unit, size_t candidates,
            std::vector<std::pair<float, uint32_t>>& heap) const;

  size_t dim_;
  live_ivf_options o_;
  partition parts_[2];
  /// The partition rows are filed into, and the one they move out of (-1: none).
  int current_ = 0;
  int old_ = -1;
  /// Rows at the last training (0: never trained), and the trainings so far.
  size_t trained_rows_ = 0;
  uint64_t generation_ = 0;
  std::vector<place> places_;
  size_t places_size_ = 0;
  std::mt19937_64 rng_;
};

} // namespace darcy::compute::mips
