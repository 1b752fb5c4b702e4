// Candidate sampling over a table of candidates with frequencies: the draw and the probability
// of each candidate under the chosen distribution (the seed's SampledResult {id, is_positive,
// prob}). Draws take O(1) through Vose's alias method; probabilities are exact.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "messages/embedding/embedding_config.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {

/// Moves `count` distinct elements of `order`, chosen by `rng`, to its first `count` places (a
/// partial Fisher-Yates shuffle); the others follow. Precondition: count <= order.size().
template <class T>
void shuffle_prefix(std::vector<T>& order, size_t count, std::mt19937_64& rng) {
  auto n = order.size();
  for (size_t i = 0; i < count; ++i)
    std::swap(order[i], order[i + rng() % (n - i)]);
}

struct sampled {
  /// Index into the candidate table.
  uint64_t id = 0;
  bool is_positive = false;
  /// Probability of drawing `id` in one draw, for the log-probability correction.
  double prob = 0;
};

class candidate_distribution {
public:
  /// `frequencies[i]` belongs to candidate i. log_uniform ranks candidates by frequency
  /// (descending, ties by index); unigram weighs them by frequency^power. Fails with
  /// errc::invalid_argument for no candidates or (unigram) a zero total weight.
  static plain_expected<candidate_distribution> make(sampler_kind kind,
                                                     std::span<const uint64_t> frequencies,
                                                     double power = 0.75);

  /// A distribution with the given unnormalized weights; errc::invalid_argument when there are
  /// none or they sum to 0.
  static plain_expected<candidate_distribution> from_weights(std::vector<double> weights);

  size_t size() const { return prob_.size(); }
  double prob(uint64_t id) const { return prob_[id]; }
  /// The unnormalized weight of the whole table (shards add these up to share samples).
  double total_weight() const { return total_weight_; }
  uint64_t draw(std::mt19937_64& rng) const;

private:
  /// One alias-table column, so that a draw reads one cache line: keep the column when the
  /// draw's 32-bit fraction is below `keep` (2^32 keeps always), else take `alias`.
  struct column {
    uint64_t keep = 0;
    uint64_t alias = 0;
  };
  std::vector<double> prob_;
  std::vector<column> columns_;
  double total_weight_ = 0;
};

/// The weight of one row of each frequency in a table whose rows have frequency freqs[i]
/// counts[i] times (freqs ascending, distinct). uniform: 1; unigram: f^power; log_uniform: rows
/// of equal frequency share the average weight of the global rank range they occupy, so the
/// weights of all rows sum to log(n + 1) as with strict ranks.
std::vector<double> frequency_weights(sampler_kind kind, std::span<const uint64_t> freqs,
                                      std::span<const uint64_t> counts, double power = 0.75);

/// Sampling groups a table's rows by frequency into classes: one class per frequency below 8,
/// then four per doubling ([8, 10), [10, 12), [12, 14), [14, 16), [16, 20), ...), 252 in all,
/// so that a row changes class at most four times each time its frequency doubles.
inline constexpr uint32_t frequency_class_count = 252;
uint32_t frequency_class(uint64_t frequency);
/// The lowest and the highest frequency of class `c` (< frequency_class_count).
uint64_t class_floor(uint32_t c);
uint64_t class_ceiling(uint32_t c);

/// The weight of one row under a table's sampler (unnormalized). uniform: 1; unigram:
/// frequency^power; log_uniform: rows ranked by frequency class over every shard (the most
/// frequent class first) share, within their class, the mean of log((r + 2) / (r + 1)) over
/// the ranks r their class occupies, so that the weights of n rows sum to log(n + 1).
class row_weights {
public:
  /// `classes` (ascending) and `counts`: how many rows each class holds over every shard;
  /// only log_uniform reads them.
  row_weights(sampler_config cfg, std::span<const uint32_t> classes,
              std::span<const uint64_t> counts);
  /// A shard's plan carries the class weights the master computed instead.
  row_weights(sampler_config cfg, std::vector<double> class_weights);

  double operator()(uint64_t frequency) const;
  /// The largest weight of a row in class `c`: the weight of its ceiling.
  double class_bound(uint32_t c) const;
  /// log_uniform's weight of a row of each class, indexed by class (empty for the others).
  const std::vector<double>& class_weights() const { return class_weights_; }
  const sampler_config& config() const { return cfg_; }

private:
  sampler_config cfg_;
  std::vector<double> class_weights_;
};

/// Returns every positive (is_positive, with its probability) followed by `num_sampled`
/// negatives drawn with replacement, none of them a positive. Fails with
/// errc::invalid_argument when a positive is out of range or every candidate is a positive.
plain_expected<std::vector<sampled>> sample(const candidate_distribution& dist,
                                            std::span<const uint64_t> positives, size_t num_sampled,
                                            std::mt19937_64& rng);

} // namespace darcy::compute
