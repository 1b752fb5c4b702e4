// Skip-gram with negative sampling, word2vec.c's update rule, on a batch's local rows: the
// caller looks the rows up once, trains them here, and sends their change back as gradients.
// Pure math over spans: no keys, no actors.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace darcy::compute {

/// word2vec.c's logistic table: 1000 points over [-6, 6].
class sigmoid_table {
public:
  static constexpr float max_exp = 6.0f;
  static constexpr size_t size = 1000;

  sigmoid_table();

  /// sigmoid(f) for |f| < max_exp, read from the table as word2vec.c does.
  float operator()(float f) const {
    return table_[static_cast<size_t>((f + max_exp) * (size / max_exp / 2))];
  }

private:
  std::array<float, size + 1> table_;
};

/// Marks a negative that equals its pair's positive; word2vec.c skips those.
inline constexpr uint32_t skipped_slot = UINT32_MAX;

/// One batch's training plan: each pair is (input slot, positive output slot) followed by
/// `negative` output slots (or skipped_slot), so a pair takes negative + 2 entries.
struct sgns_plan {
  uint32_t negative = 0;
  std::vector<uint32_t> entries;

  size_t pairs() const { return entries.size() / (negative + 2u); }
};

/// Runs the plan's pairs in order with learning rate `alpha`. `in` holds the input rows and
/// `out` the output rows, `dim` floats per slot, row-major; every slot in the plan must be in
/// range. Returns the number of pairs trained.
size_t train_sgns(const sgns_plan& plan, float alpha, std::span<float> in, std::span<float> out,
                  size_t dim, const sigmoid_table& sigmoid);

/// word2vec.c's subsampling: the probability of keeping a word seen `count` times among
/// `total` words, with threshold `sample` (0: keep every word).
float keep_probability(uint64_t count, uint64_t total, double sample);

/// word2vec.c's learning rate after `done` of `total` words: linear decay from `alpha`, floored
/// at alpha * 1e-4.
float decayed_alpha(float alpha, uint64_t done, uint64_t total);

} // namespace darcy::compute
