// Estimator exports behind `darcy serve`: an export folder (as export_model writes it) loaded
// without the code that trained it, and its predict API on JSON instances.
//
//   POST /v1/models/{name}:predict  {"instances": [{"words": ["a", "b"], "x": 0.5}, ...]}
//   → {"model": name, "version": "3", "predictions": [[...], ...]}, plus "labels": [[...], ...]
//     for a model that ends in a sampled-softmax head
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <caf/expected.hpp>

#include "actors/serving/access_policy.hpp"
#include "ops/estimator/export.hpp"

namespace darcy::serving {

/// Instances one predict request may carry.
inline constexpr size_t max_predict_instances = 4096;

/// The batch of a predict body. Each feature of an instance is a number, a list of numbers
/// (of one length in every instance), a string or a list of strings, and every instance has
/// the same features. errc::invalid_argument naming the instance and the feature otherwise;
/// errc::batch_too_large beyond max_predict_instances; errc::empty_batch for no instance.
caf::expected<ops::estimator::batch> parse_instances(const std::string& body);

class estimator_model {
public:
  /// The newest export under `dir`, its requests admitted by `rules`, its dynamic embeddings
  /// served where `where` says; exported_model::load's errors.
  static caf::expected<std::unique_ptr<estimator_model>> load(
    const std::string& dir, access_rules rules,
    const ops::estimator::embedding_placement& where = {});

  /// The JSON answer to a predict request of ctx.principal for model `name`; thread-safe.
  /// errc::access_denied or errc::quota_exceeded by the rules; parse_instances' errors; the
  /// model's errors for features it cannot read.
  caf::expected<std::string> predict(const std::string& name, const std::string& body,
                                     const request_context& ctx);

  /// The JSON answer to a sync request (`POST /v1/models/NAME:sync {"dir": DIR}`) of
  /// ctx.principal, which needs `manage` on the model: its dynamic embeddings brought to the
  /// current checkpoint of the training run's sync directory DIR (exported_model::follow);
  /// thread-safe, and predictions wait for it. errc::access_denied by the rules;
  /// errc::invalid_argument for a body without "dir"; follow's errors.
  caf::expected<std::string> sync(const std::string& name, const std::string& body,
                                  const request_context& ctx);

  /// {"name", "kind": "estimator", "version", "embeddings": "shards" or "in-process"}, and
  /// "sync": {"checkpoint", "step", "age_s"} once a sync was applied.
  std::string describe(const std::string& name) const;

private:
  estimator_model() = default;

  /// predict() runs one request at a time: the exported model keeps per-call state.
  mutable std::mutex mutex_;
  std::unique_ptr<ops::estimator::exported_model> model_;
  actors::access_policy access_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  /// The last sync applied, and when.
  std::optional<ops::estimator::exported_model::followed> synced_;
  std::chrono::steady_clock::time_point synced_at_;
};

} // namespace darcy::serving
