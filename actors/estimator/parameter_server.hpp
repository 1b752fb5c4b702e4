// A parameter server as an actor: it holds one shard of a model's dense variables with their
// Adam state, answers their values, and applies each worker's gradients as they come
// (asynchronous training: no step waits for another worker's). The chief loads it and saves
// it. Interface and contract: parameter_server_actor (messages/estimator/).
#pragma once

#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>

#include "compute/nn/optimizers.hpp"
#include "messages/estimator/estimator_interfaces.hpp"

namespace darcy::actors {

struct parameter_server_state {
  ps_config config;
  /// Stable addresses: the optimizer keys its moments by parameter.
  std::deque<compute::nn::parameter<float>> variables;
  compute::nn::parameter_list<float> list;
  std::optional<compute::nn::optimizer> optimizer;
  uint64_t global_step = 0;
  bool loaded = false;
  /// The load_id of the last load applied (0: none, or one without an id).
  uint64_t last_load = 0;
  /// The finite losses of the steps applied since the last load: their sum and count.
  double loss_sum = 0;
  uint64_t losses = 0;
  /// Per client: the seq of its last push applied, and the global step that push gave.
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> pushes;
  static inline const char* name = "darcy.parameter_server";
};

using parameter_server_pointer = parameter_server_actor::stateful_pointer<parameter_server_state>;

/// Exits with errc::invalid_config when the Adam hyperparameters are invalid.
parameter_server_actor::behavior_type parameter_server(parameter_server_pointer self,
                                                       ps_config config);

} // namespace darcy::actors
