// A mixture-of-experts layer trained on a cluster, and kept training through node failures:
// the experts run under a supervisor on the cluster's nodes, a router and the data-parallel
// replicas run in this process, and the layer is checkpointed every few steps on the common
// mechanism. When an expert's node dies, the supervisor starts the expert again on a live
// node, and the run restores every expert and the gate from the last checkpoint (onto however
// many nodes are left) and continues from its step.
//
//   ops::moe_train_options o;
//   o.layer.dim = 32; o.layer.gating = {.experts = 8, .k = 2};
//   o.checkpoint_dir = "run/checkpoints";
//   auto result = ops::train_moe(*session, o);    // result->losses, result->restores
//
// The task is regression onto a fixed random teacher, y* = tanh(x·A), with inputs drawn from
// (seed, step, replica): a rerun of the same options sees the same batches, so a run restored
// from a checkpoint ends exactly where an uninterrupted one does.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

#include "compute/nn/tensor.hpp"
#include "messages/moe/moe_interfaces.hpp"
#include "ops/session.hpp"

namespace darcy::ops {

struct moe_train_options {
  moe_config layer;
  /// Data-parallel replicas whose batches the router combines each step.
  uint32_t replicas = 2;
  /// Rows per replica and step.
  uint32_t batch = 64;
  uint64_t steps = 100;
  double learning_rate = 1e-2;
  /// Required: the checkpoint root, readable by this process (the experts' nodes write their
  /// parts there: one host, or a shared file system).
  std::string checkpoint_dir;
  uint32_t checkpoint_every = 10;
  uint32_t keep = 2;
  /// Nodes that run experts (round-robin, then any live one). Empty: every member.
  std::vector<std::string> expert_nodes;
  uint64_t seed = 1;
  /// Service-name prefix of the experts, unique in the cluster.
  std::string prefix = "moe";
  /// Restores after which the run fails instead.
  uint32_t max_restores = 8;
  /// On a cluster, a request to an expert unanswered after expert_retry × (attempt + 1) is sent
  /// again, up to expert_attempts in all, so that a lost message costs a retry instead of a
  /// restore. expert_retry must exceed an expert's slowest step.
  uint32_t expert_attempts = 4;
  std::chrono::milliseconds expert_retry{1000};
  /// Called after every step on the calling thread.
  std::function<void(uint64_t step, double loss)> on_step;
  /// Called after every restore, with the checkpoint's step and the cause.
  std::function<void(int64_t step, const std::string& cause)> on_restore;
};

struct moe_train_result {
  /// Loss of every step; steps replayed after a restore are counted once.
  std::vector<double> losses;
  uint32_t restores = 0;
  /// Examples each expert took in the last step (the combined batch of all replicas).
  std::vector<uint32_t> expert_batch;
  /// Where the experts ran at the end, in expert order.
  std::vector<std::string> expert_nodes;
};

/// errc::invalid_config for a bad layer, zero replicas, batch or steps, or no checkpoint
/// directory; errc::restart_intensity_exceeded after max_restores restores; the supervisor's
/// reason when it gives up on an expert.
caf::expected<moe_train_result> train_moe(session& s, const moe_train_options& o);

/// One phase of a synchronous step, sent as its data-parallel replicas would: forward (inputs)
/// or backward (output gradients) of `step`, block r from replica r, all sent before any answer
/// is awaited; answers in replica order, or the first error.
caf::expected<std::vector<compute::nn::matrix>> moe_phase(
  caf::scoped_actor& self, const moe_router_actor& router, bool forward, uint64_t step,
  const std::vector<compute::nn::matrix>& blocks, std::chrono::milliseconds timeout);

} // namespace darcy::ops
