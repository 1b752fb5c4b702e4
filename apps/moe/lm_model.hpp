// The MoE language model of the paper, scaled down: embedding (looked up by raw word in the
// dynamic embedding service) → LSTM → middle layer → LSTM → output rows (also in the service,
// bias as their last column), with residual connections around the middle and the second
// LSTM. The middle layer is a MoE layer, a hierarchical MoE, or, for the computation-matched
// dense baseline, a third LSTM. Trained with a sampled softmax over truncated-BPTT windows;
// evaluated with a full softmax over the output vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "apps/moe/lm_corpus.hpp"
#include "compute/moe/hierarchical_moe.hpp"
#include "compute/moe/moe_layer.hpp"
#include "compute/nn/dropout.hpp"
#include "compute/nn/lstm.hpp"
#include "compute/nn/optimizers.hpp"
#include "compute/nn/sampled_softmax.hpp"
#include "ops/session.hpp"

namespace darcy::moe {

enum class lm_middle { lstm, moe, hierarchical };

struct lm_options {
  uint32_t dim = 128;
  lm_middle middle = lm_middle::moe;
  /// The MoE layer (dim is set from `dim`); for a hierarchical MoE, each group's.
  moe_config layer;
  /// The primary gate of a hierarchical MoE (experts = groups).
  gating_config primary;
  /// Sequences per batch and time steps per window.
  uint32_t batch = 32;
  uint32_t unroll = 20;
  /// Negatives of the sampled softmax, shared by the batch.
  uint32_t sampled = 512;
  double learning_rate = 2e-3;
  float embedding_learning_rate = 2e-3f;
  double clip_norm = 5.0;
  /// Inverted dropout, in training, on the input rows, on the middle layer's output and on the
  /// last LSTM's output (0: none).
  double dropout = 0;
  uint32_t epochs = 1;
  /// Stop after this many steps (0: the epochs).
  uint64_t max_steps = 0;
  size_t threads = 2;
  /// Trains the MoE layer (a hierarchical MoE's groups) on CUDA device 0; evaluation stays on
  /// the CPU.
  bool gpu = false;
  uint64_t seed = 1;
  /// Embedding names in the service (unique per run in one session).
  std::string name = "lm";
};

/// What the evaluation of one stream measured.
struct lm_eval {
  double perplexity = 0;
  uint64_t tokens = 0;
  /// Examples per expert over the stream, at inference (empty for the dense baseline).
  std::vector<uint64_t> expert_load;
  /// Of a batchwise gate: how often the threshold mask agreed with the batchwise mask.
  std::optional<double> threshold_agreement;
};

/// errc::invalid_config for sizes, rates or a layer that lm_model::make would refuse; cheap,
/// so that a sweep can check every row before it trains the first.
caf::error validate(const lm_options& o);

class lm_model {
public:
  /// errc::invalid_config for a bad layer or sizes.
  static caf::expected<std::unique_ptr<lm_model>> make(ops::session& s, const lm_options& o,
                                                       const lm_corpus& corpus);

  /// One training window: rows (t, b) of the batch, t-major. Returns the sampled-softmax loss.
  caf::expected<double> train_step(const std::vector<std::string>& inputs,
                                   const std::vector<uint64_t>& labels, uint64_t step);

  /// Full-softmax perplexity of `stream`, and the experts' load over it.
  caf::expected<lm_eval> evaluate(const lm_stream& stream);

  /// Resets the recurrent state (between epochs and before an evaluation).
  void reset_state();

  /// Training mode (dropout on, batchwise gates) or inference mode.
  void set_training(bool training);

  /// Trainable parameters: the dense layers', and the embedding rows of the vocabulary (input
  /// and output).
  uint64_t parameters() const;
  /// Multiply-adds per word of the forward pass, excluding the softmax.
  double multiply_adds_per_word() const;

  /// Where the MoE layer (every group of a hierarchical one) trains: "cpu", "gpu", or, after a
  /// device failure, "cpu (the GPU failed: REASON)".
  std::string moe_device() const;

private:
  lm_model(ops::session& s, const lm_options& o, const lm_corpus& corpus);

  compute::nn::matrix middle_forward(const compute::nn::matrix& x);
  compute::nn::matrix middle_backward(const compute::nn::matrix& dy);
  /// Dropout layer `which` applied to x (its backward to dy), or x itself without dropout.
  compute::nn::matrix drop(size_t which, const compute::nn::matrix& x);
  compute::nn::matrix drop_backward(size_t which, const compute::nn::matrix& dy);
  /// The network from input rows (t-major) to the last hidden rows.
  compute::nn::matrix forward(const compute::nn::matrix& embedded);
  compute::nn::parameter_list<float> dense_parameters();

  ops::session& session_;
  lm_options o_;
  const lm_corpus& corpus_;
  de_config input_config_, output_config_;
  std::mt19937_64 rng_;
  std::optional<compute::nn::lstm<float>> first_, second_, middle_lstm_;
  std::unique_ptr<compute::moe::moe_layer<float>> moe_;
  std::unique_ptr<compute::moe::hierarchical_moe<float>> hierarchy_;
  compute::nn::lstm_state<float> first_state_, second_state_, middle_state_;
  /// The first LSTM's outputs of the last forward (the middle layer's input).
  compute::nn::matrix h1_;
  std::optional<compute::nn::optimizer> optimizer_;
  std::optional<compute::candidate_distribution> sampler_;
  compute::nn::sampled_softmax<float> softmax_;
  /// Dropout of the input rows, the middle layer's output and the network's output; empty
  /// without dropout.
  std::vector<compute::nn::dropout<float>> dropouts_;
  uint64_t parameter_count_ = 0;
};

} // namespace darcy::moe
