// Canned estimators: linear, DNN and DNN+linear combined (Wide & Deep) model functions, each a
// classifier or a regressor by its head, and DLRM's click-through classifier. Each is only a
// model_fn built on the public API (input_layer, dense, relu, add, head_spec), which is the proof
// that the API is enough.
//
//   auto fn = dnn_model({.columns = {pixels}, .hidden_units = {256, 128},
//                        .head = {.kind = head_kind::multi_class, .classes = 10}});
//   estimator e{*fn, cfg};
#pragma once

#include <vector>

#include <caf/expected.hpp>

#include "compute/estimator/feature_columns.hpp"
#include "compute/estimator/heads.hpp"
#include "ops/estimator/estimator.hpp"

namespace darcy::ops::estimator {

using column_list = std::vector<compute::estimator::dense_ptr<float>>;

// A model function whose columns own embedding tables (embedding_column, whose values live in
// the column) serves one estimator; called by another it fails with errc::invalid_config.
// Build one per estimator, as train_and_evaluate's make_model does.

struct canned_options {
  /// The deep part's input (DNN and combined models).
  column_list columns;
  std::vector<uint32_t> hidden_units;
  /// The DNN's dropout rate after each hidden layer, in training (0: none; below 1).
  float dropout = 0;
  /// Batch normalisation between each hidden layer's product and its ReLU, as TF's
  /// DNNClassifier(batch_norm=True).
  bool batch_norm = false;
  /// The wide part's input (linear and combined models): usually indicator or embedding
  /// columns of sparse features, crossed ones included.
  column_list linear_columns;
  compute::estimator::head_config head;
};

/// logits = dense(input(linear_columns)). errc::invalid_config for no columns or a bad head.
caf::expected<model_fn> linear_model(canned_options o);

/// logits = dense(dropout(relu(dense(... input(columns))))). errc::invalid_config for no
/// columns, no hidden layer, a layer of 0 units, a dropout rate outside [0, 1) or a bad head.
caf::expected<model_fn> dnn_model(canned_options o);

/// The sum of the DNN's and the linear model's logits, trained jointly.
caf::expected<model_fn> dnn_linear_combined_model(canned_options o);

/// DLRM (Naumov et al., 2019). The defaults are the reference Kaggle configuration.
struct dlrm_options {
  /// The bottom MLP's input: numeric columns (Criteo's 13 counts, log1p).
  column_list dense_columns;
  /// One embedding per categorical field, each as wide as the bottom MLP's last layer (usually
  /// dynamic embeddings of raw strings; a column of several fields side by side, as
  /// dynamic_embedding_columns makes, counts as that many).
  column_list embedding_columns;
  /// ReLU after every layer of both MLPs; the top MLP is followed by the logit layer.
  std::vector<uint32_t> bottom_units = {512, 256, 64, 16};
  std::vector<uint32_t> top_units = {512, 256};
  /// As canned_options' (between the product and the ReLU of every MLP layer).
  bool batch_norm = false;
  /// After every top MLP layer, in training.
  float dropout = 0;
};

/// logits = dense(top(dot_interaction(bottom(input(dense_columns)),
/// input(embedding_columns)))), with a logistic head: a click-through classifier.
/// errc::invalid_config for no columns of either kind, an empty MLP or a layer of 0 units, an
/// embedding column whose width is not a multiple of bottom_units.back(), or a dropout outside
/// [0, 1).
caf::expected<model_fn> dlrm_classifier(dlrm_options o);

} // namespace darcy::ops::estimator
