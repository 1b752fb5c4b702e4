// The sampled softmax loss (Jean et al., 2015) for output vocabularies too large for a full
// softmax: each example scores its label against negatives drawn by Darcy's candidate sampler,
// every logit corrected by −log Q, the log of the candidate's expected count in the sample.
// The output rows can live anywhere (a dense matrix, the embedding service): the loss takes
// the rows of this step's candidates and returns their gradients.
//
//   auto c = nn::draw_candidates(vocabulary, labels, 64, rng);
//   // gather rows c->rows of the output weights and biases into w (m × d) and b (m)
//   auto loss = sampled.forward(h, w, b, *c);
//   auto g = sampled.backward();   // g.h, and g.weights / g.bias for the rows c->rows
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "compute/nn/tensor.hpp"
#include "compute/sampler.hpp"

namespace darcy::compute::nn {

/// One step's candidates. Every row appears once in `rows`; label_index[i] and sampled_index[j]
/// point into it. Sampled negatives are drawn with replacement; a draw equal to an example's
/// own label is masked out of that example's softmax (an accidental hit).
struct sampled_candidates {
  /// Ids in the output vocabulary (indexes into the sampler's table).
  std::vector<uint64_t> rows;
  /// Per example, its label's place in `rows`.
  std::vector<uint32_t> label_index;
  /// Per draw, the negative's place in `rows` (a row drawn twice appears twice).
  std::vector<uint32_t> sampled_index;
  /// Per row, log(num_sampled · p(row)).
  std::vector<double> log_q;
};

/// How a batch's negatives relate to its labels.
///  - exclude_labels: never a label of the batch (word2vec-style batches of a few labels).
///  - remove_accidental_hits: drawn from the whole table, as TensorFlow's
///    sampled_softmax_loss: another example's label may be this example's negative, and a draw
///    equal to the example's own label is masked out of its softmax. A language model needs
///    this: its batches hold every frequent word as some example's label, and excluding them
///    would never teach it that they are wrong elsewhere.
enum class negative_draw { exclude_labels, remove_accidental_hits };

/// Draws `num_sampled` negatives for a batch whose labels are `labels` (repeats allowed).
/// Fails with errc::invalid_argument when a label is outside the table, num_sampled is 0, or
/// (exclude_labels) every candidate is a label.
plain_expected<sampled_candidates> draw_candidates(
  const candidate_distribution& dist, std::span<const uint64_t> labels, size_t num_sampled,
  std::mt19937_64& rng, negative_draw draw = negative_draw::exclude_labels);

template <class T>
class sampled_softmax {
public:
  using matrix = matrix_t<T>;

  struct gradients {
    matrix h;       // batch × d
    matrix weights; // rows.size() × d, in the order of candidates.rows
    matrix bias;    // 1 × rows.size()
  };

  /// The batch mean loss. Preconditions: h is batch × d with batch == label_index.size() > 0,
  /// weights is rows.size() × d, bias is 1 × rows.size().
  T forward(const matrix& h, const matrix& weights, const matrix& bias,
            const sampled_candidates& candidates);

  /// Gradients of the last forward's loss.
  gradients backward() const;

private:
  matrix h_;
  matrix weights_;
  matrix dlogits_;
  const sampled_candidates* candidates_ = nullptr;
};

} // namespace darcy::compute::nn
