// The router of a mixture-of-experts layer whose experts are actors: each synchronous step it
// combines the batches of all data-parallel replicas into one, gates it, sends every expert the
// examples it was given (the paper's combined batch, so experts see k·b·replicas/n examples),
// and splits the combined output back. It owns the gate and the gate's Adam state.
// Interface and contract: moe_router_actor (messages/moe/moe_interfaces.hpp).
#pragma once

#include <optional>
#include <vector>

#include "actors/fan_out.hpp"
#include "compute/moe/dispatch.hpp"
#include "compute/moe/gate.hpp"
#include "compute/nn/optimizers.hpp"
#include "messages/moe/moe_interfaces.hpp"

namespace darcy::actors {

/// The replicas' requests of one phase (forward or backward) of the step in progress.
struct router_phase {
  uint64_t step = 0;
  std::vector<std::optional<row_block>> blocks;
  std::vector<caf::typed_response_promise<row_block>> promises;
  size_t arrived = 0;
};

struct moe_router_state {
  moe_router_config config;
  std::vector<expert_actor> experts;
  std::optional<compute::moe::gate<float>> gate;
  std::optional<compute::nn::optimizer> optimizer;
  std::optional<router_phase> waiting;
  /// Set between a step's forward and its backward.
  std::optional<uint64_t> forwarded;
  compute::moe::dispatch_plan plan;
  compute::nn::matrix out;
  std::vector<uint32_t> replica_rows;
  uint64_t steps = 0;
  /// The fan-out to the experts in flight (a phase, a save or a load).
  std::shared_ptr<fan_out_state> inflight;
  /// Set once a monitored expert went down: every later request fails with it.
  caf::error lost;
  /// Set while a save or load runs: steps wait for it to end.
  bool checkpointing = false;
  /// As an expert of another router: the last save's name and index part.
  std::string saved_name;
  file_info saved_part;
  static inline const char* name = "darcy.moe_router";
};

using moe_router_pointer = moe_router_actor::stateful_pointer<moe_router_state>;

/// Routes to `experts`, expert e at index e. Exits with errc::invalid_config when the layer,
/// the replica count or the expert count is invalid. It monitors its experts: when one goes
/// down (its node lost), the work in flight and every later request fail with
/// errc::unavailable naming it; the caller restores a new router over the restarted experts
/// from the last checkpoint.
moe_router_actor::behavior_type moe_router(moe_router_pointer self, moe_router_config config,
                                           std::vector<expert_actor> experts);

} // namespace darcy::actors
