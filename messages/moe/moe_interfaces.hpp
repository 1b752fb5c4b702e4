// The typed interfaces of the mixture-of-experts service: expert actors, each owning one
// expert's parameters and optimizer, and the router, which gates the combined batch of every
// data-parallel replica and sends each expert its examples.
#pragma once

#include <cstdint>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/checkpoint.hpp"
#include "messages/moe/moe_config.hpp"
#include "messages/shared_floats.hpp"

namespace darcy {

using forward_atom = caf::atom_constant<caf::atom("forward")>;

/// `rows` rows of `values.size() / rows` floats each, row-major, for training step `step`.
struct row_block {
  uint64_t step = 0;
  uint32_t rows = 0;
  shared_floats values;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, row_block& x) {
  return f(caf::meta::type_name("row_block"), x.step, x.rows, x.values);
}

/// What a router was started with: the layer, the replicas whose batches it combines, the
/// experts (in expert order) and the gate's Adam learning rate.
struct moe_router_config {
  moe_config layer;
  uint32_t replicas = 1;
  double learning_rate = 1e-3;
  /// Requests to an expert not answered within expert_attempt_ms × (attempt + 1) are sent
  /// again, up to expert_attempts in all (saves and loads wait ten times longer). Experts
  /// answer a repeated request once applied; a router over other routers must keep 1.
  uint32_t expert_attempts = 1;
  int64_t expert_attempt_ms = 120000;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, moe_router_config& x) {
  return f(caf::meta::type_name("moe_router_config"), x.layer, x.replicas, x.learning_rate,
           x.expert_attempts, x.expert_attempt_ms);
}

/// An expert actor's spawn argument: the layer (for the expert's shape), which expert it is
/// (its initial weights depend on the seed and the index), and its Adam learning rate.
struct expert_config {
  moe_config layer;
  uint32_t index = 0;
  double learning_rate = 1e-3;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, expert_config& x) {
  return f(caf::meta::type_name("expert_config"), x.layer, x.index, x.learning_rate);
}

/// What the router saw in its last step.
struct moe_router_status {
  uint64_t steps = 0;
  /// Examples each expert took in the last step (the combined batch across replicas).
  std::vector<uint32_t> expert_batch;
  /// Auxiliary (balancing) loss of the last step's gate.
  double aux_loss = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, moe_router_status& x) {
  return f(caf::meta::type_name("moe_router_status"), x.steps, x.expert_batch, x.aux_loss);
}

/// A checkpoint request to a router: the checkpoint root, the caller's step and state to save
/// with it (manifest step and extra), and how many checkpoints to keep.
struct moe_save_request {
  std::string root;
  int64_t step = 0;
  uint32_t keep = 2;
  std::string extra;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, moe_save_request& x) {
  return f(caf::meta::type_name("moe_save_request"), x.root, x.step, x.keep, x.extra);
}

/// Service name of MoE checkpoints: one part per expert in expert order, then the gate's.
inline constexpr const char* moe_service_name = "moe";

/// One expert. forward keeps the step's input; backward takes dL/d(output) of the same rows,
/// applies the expert's optimizer and answers dL/d(input). A backward without its forward, or
/// of another shape, fails with errc::invalid_argument; rows of the wrong width fail with
/// errc::dimension_mismatch.
///
/// save (root, name) writes the expert's parameters and Adam state as the part "<name>.params"
/// (relative to the root; the router names it inside its checkpoint's directory) and answers
/// its file_info; asked again for the same name, it answers the same part without writing
/// again. load (root, part) restores them from a part of any expert actor of the same shape,
/// wherever it ran, and drops a pending forward.
using expert_actor =
  caf::typed_actor<caf::replies_to<forward_atom, row_block>::with<row_block>,
                   caf::replies_to<backward_atom, row_block>::with<row_block>,
                   caf::replies_to<save_atom, std::string, std::string>::with<file_info>,
                   caf::replies_to<load_atom, std::string, file_info>::with<ok_atom>>;

/// The router of a synchronous MoE step. Replica r sends forward (its batch x) and later
/// backward (its dL/dy) for the same step; the router answers every replica once all
/// `replicas` have sent theirs, gating their concatenation (replica order) as one batch, so that
/// each expert sees the examples of every replica at once. Errors: errc::dimension_mismatch
/// for rows of the wrong width, errc::invalid_argument for a replica index out of range, a
/// replica sending twice, or a step other than the one in progress; errc::non_finite for a
/// block holding NaN or infinity, which is dropped, so the replica may send a good one; an
/// expert's error fails every replica's request of that step. Experts apply their optimizer
/// as they answer a backward, so a backward that fails part-way leaves the experts that
/// answered updated: recovering from it means restoring a checkpoint.
///
/// save takes a consistent checkpoint of the whole layer between steps, on the common
/// mechanism: every expert's part, then the gate's, then the manifest (service "moe", one part
/// per expert in expert order and the gate's last). load restores every expert and the gate
/// from the root's current checkpoint and answers its manifest, so the caller resumes at its
/// step with its extra state. Experts are found by index, not by node, so a checkpoint restores
/// onto any placement. Both fail with errc::invalid_argument while a step is in progress;
/// load fails with errc::not_found without a checkpoint and errc::invalid_config when the
/// checkpoint holds another number of experts.
///
/// A router of one replica also answers the expert interface (forward and backward without a
/// replica index; save and load of its whole layer, as an index part listing its own parts),
/// so that it can stand as one expert of another router: the secondary MoE of
/// a hierarchical MoE, its own actor group under a data-parallel primary gate.
using moe_router_actor =
  caf::typed_actor<caf::replies_to<forward_atom, uint32_t, row_block>::with<row_block>,
                   caf::replies_to<backward_atom, uint32_t, row_block>::with<row_block>,
                   caf::replies_to<forward_atom, row_block>::with<row_block>,
                   caf::replies_to<backward_atom, row_block>::with<row_block>,
                   caf::replies_to<save_atom, std::string, std::string>::with<file_info>,
                   caf::replies_to<load_atom, std::string, file_info>::with<ok_atom>,
                   caf::replies_to<status_atom>::with<moe_router_status>,
                   caf::replies_to<save_atom, moe_save_request>::with<checkpoint_manifest>,
                   caf::replies_to<load_atom, std::string>::with<checkpoint_manifest>>;

} // namespace darcy
