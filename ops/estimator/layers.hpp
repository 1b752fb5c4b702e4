// Layers of a model function: free functions over a model_context that compute on
// compute/nn's kernels, create their variables by name on first use, and record their
// backward step on the context's tape.
//
//   auto h = relu(ctx, dense(ctx, x, 256, "hidden0"));
//   auto logits = dense(ctx, h, 10, "logits");
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "compute/estimator/feature_columns.hpp"
#include "ops/estimator/model_context.hpp"

namespace darcy::ops::estimator {

/// x·kernel + bias, with variables "<name>/kernel" (Glorot uniform, seeded by the name and the
/// context's seed) and "<name>/bias" (zeros).
tensor dense(model_context& ctx, tensor x, uint32_t units, const std::string& name);

tensor relu(model_context& ctx, tensor x);

/// Inverted dropout: in training, each entry is zeroed with probability `rate` and the others
/// scaled by 1 / (1 - rate), by a mask drawn from (the context's seed, its step, `name`);
/// otherwise x itself, so that evaluation, prediction and exports see no dropout.
/// Precondition: 0 <= rate < 1.
tensor dropout(model_context& ctx, tensor x, float rate, const std::string& name);

/// Batch normalisation of each column: in training by the batch's mean and variance, whose
/// moving averages (decay `momentum`) the step moves; otherwise by those averages. Variables
/// "<name>/gamma" (ones), "<name>/beta" (zeros), and the moving statistics
/// "<name>/moving_mean" (zeros) and "<name>/moving_variance" (ones), which optimizers move by
/// (1 − momentum) · (average − batch value) each step. Precondition: 0 <= momentum < 1, eps > 0.
tensor batch_norm(model_context& ctx, tensor x, const std::string& name, float momentum = 0.99f,
                  float eps = 1e-3f);

/// DLRM's dot interaction of `dense` (batch × d) and `sparse` (batch × F·d, F embeddings side
/// by side): dense followed by the F (F + 1) / 2 pairwise dot products of the F + 1 vectors
/// (compute/nn/dot_interaction.hpp). errc::dimension_mismatch when the widths disagree.
caf::expected<tensor> dot_interaction(model_context& ctx, tensor dense, tensor sparse);

/// a + b, of one shape (the logits of a wide and a deep part).
tensor add(model_context& ctx, tensor a, tensor b);

/// x with a column of ones appended: an inner product of the result with a row then adds the
/// row's last entry, a bias per row (per label, for the sampled-softmax head's label rows).
tensor append_ones(model_context& ctx, tensor x);

/// The dense input of `features` through `layer`, whose trainable tables join the context's
/// variables. errc::invalid_argument from the feature columns for a bad batch.
caf::expected<tensor> input_layer(model_context& ctx,
                                  const compute::estimator::feature_map& features,
                                  compute::estimator::input_layer<float>& layer);

} // namespace darcy::ops::estimator
