// The evaluator role: it follows a chief's checkpoints, evaluates each new one, and exports the
// model when the chosen metric improves (the paper's continuous evaluation). Pointed at the
// training input instead, it shows how far training and held-out quality drift apart.
//
//   evaluator ev{model, {.model_dir = "/tmp/model"}, {}, {.input = test, .metric = "accuracy",
//                                                          .higher_is_better = true,
//                                                          .export_dir = "/tmp/exports"}};
//   auto rounds = ev.follow(10000, std::chrono::seconds(1), print_round);
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "ops/estimator/estimator.hpp"

namespace darcy::ops::estimator {

struct eval_spec {
  input_fn input;
  /// Batches per evaluation (0: the whole input).
  uint64_t steps = 0;
  /// The metric that decides whether a checkpoint is better than the best so far.
  std::string metric = "loss";
  bool higher_is_better = false;
  /// Where an improving checkpoint is exported (empty: nowhere).
  std::string export_dir;
  size_t keep_exports = 5;
};

struct evaluation {
  uint64_t global_step = 0;
  std::map<std::string, double> metrics;
  bool improved = false;
  /// The export's version when this evaluation exported one.
  std::string exported;
};

class evaluator {
public:
  /// `cfg.model_dir` is the chief's; `cfg.servers` must be unset.
  evaluator(model_fn fn, run_config cfg, params p, eval_spec spec);

  /// Evaluates the newest checkpoint unless it was evaluated already (then: nullopt).
  /// errc::invalid_argument when spec.metric is not among the model's metrics.
  caf::expected<std::optional<evaluation>> evaluate_newest();

  /// Evaluates each new checkpoint until one at global step ≥ `last_step` has been evaluated,
  /// looking for a new one every `poll`; `on_each` sees each evaluation as it ends.
  caf::expected<std::vector<evaluation>> follow(
    uint64_t last_step, std::chrono::milliseconds poll,
    const std::function<void(const evaluation&)>& on_each = {});

  const std::optional<double>& best() const { return best_; }

private:
  estimator estimator_;
  eval_spec spec_;
  std::optional<uint64_t> last_;
  std::optional<double> best_;
};

} // namespace darcy::ops::estimator
