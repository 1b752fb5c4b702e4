// An expert of a mixture-of-experts layer as an actor: it owns the expert's parameters and its
// Adam state, computes its examples' outputs, and on backward applies its own optimizer. Only
// experts that took examples in a step take that step (lazy Adam, as the embedding shards do).
// Interface and contract: expert_actor (messages/moe/moe_interfaces.hpp).
#pragma once

#include <optional>
#include <string>

#include "compute/moe/expert.hpp"
#include "compute/nn/optimizers.hpp"
#include "messages/moe/moe_interfaces.hpp"

namespace darcy::actors {

struct expert_state {
  expert_config config;
  std::optional<compute::moe::expert<float>> expert;
  std::optional<compute::nn::optimizer> optimizer;
  /// The last forward, which the next backward must match.
  std::optional<uint64_t> step;
  compute::nn::matrix in;
  compute::nn::matrix hidden;
  uint64_t examples = 0;
  /// The answer of the last backward applied, given again to a repeated request.
  std::optional<row_block> last_backward;
  /// The last save: its name and part, answered again to a repeated request.
  std::string saved_name;
  file_info saved_part;
  static inline const char* name = "darcy.moe_expert";
};

using expert_pointer = expert_actor::stateful_pointer<expert_state>;

/// Exits with errc::invalid_config when the layer or the learning rate is invalid.
expert_actor::behavior_type moe_expert(expert_pointer self, expert_config config);

} // namespace darcy::actors
