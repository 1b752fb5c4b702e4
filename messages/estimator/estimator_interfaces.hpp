// The typed interfaces of the Estimator's distributed roles: parameter-server actors, which
// hold a shard of a model's dense variables with their Adam state, and training workers, which
// run an Estimator's steps against them (asynchronous data parallelism, as in the paper).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/optimizer_config.hpp"
#include "messages/shared_floats.hpp"

namespace darcy {

/// Dense tensors by name: tensor i is names[i], rows[i] × cols[i] floats in values[i],
/// row-major. All four vectors have one entry per tensor.
struct named_tensors {
  std::vector<std::string> names;
  std::vector<uint32_t> rows;
  std::vector<uint32_t> cols;
  std::vector<shared_floats> values;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, named_tensors& x) {
  return f(caf::meta::type_name("named_tensors"), x.names, x.rows, x.cols, x.values);
}

/// A parameter server's whole state: its variables, their optimizer slots (slot k of every
/// variable, same names, shapes and order: Adam's m then v, Adagrad's accumulator...), the
/// optimizer's step count and the global step (the gradients it has applied).
struct ps_state {
  named_tensors values;
  std::vector<named_tensors> slots;
  uint64_t optimizer_steps = 0;
  uint64_t global_step = 0;
  /// Nonzero: a load whose id equals that of the last load the server applied (a retry, or a
  /// late copy) is answered without being applied again, so that it cannot undo later pushes.
  uint64_t load_id = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ps_state& x) {
  return f(caf::meta::type_name("ps_state"), x.values, x.slots, x.optimizer_steps, x.global_step,
           x.load_id);
}

/// A parameter server's spawn argument: which shard it is, and its optimizer.
struct ps_config {
  uint32_t index = 0;
  optimizer_config optimizer{.kind = optimizer_kind::adam, .learning_rate = 1e-3f};
  /// Of optimizer.learning_rate, by the global step a push is applied at.
  learning_rate_schedule schedule;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ps_config& x) {
  return f(caf::meta::type_name("ps_config"), x.index, x.optimizer, x.schedule);
}

/// One shard of a model's dense variables.
///  - load: replaces the whole state (the chief initialises, or restores a checkpoint); a load
///    carrying the load_id of the last one applied is answered ok and not applied again.
///  - fetch: the current values and the global step.
///  - step: the global step alone (no tensor is encoded).
///  - backward (client, seq, gradients, loss): applies one step of gradients (names and shapes
///    must match the state's; an empty set only counts the step) and answers the new global
///    step. `loss` is the worker's training loss of that step (NaN: none). Non-finite
///    gradients are refused with errc::non_finite and change nothing. A client other than 0
///    numbers its pushes 1, 2, ...: a push whose seq is not above the last one applied for
///    that client (a retry, or a late copy) is not applied again; it is answered with the step
///    the last push gave.
///  - stats: the sum and the count of the finite losses of the steps applied since the last
///    load, for the chief's summaries.
///  - save: the whole state, for the chief's checkpoint.
/// Every call before the first load fails with errc::unavailable.
using parameter_server_actor = caf::typed_actor<
  caf::replies_to<load_atom, ps_state>::with<ok_atom>,
  caf::replies_to<fetch_atom>::with<named_tensors, uint64_t>,
  caf::replies_to<step_atom>::with<uint64_t>,
  caf::replies_to<backward_atom, uint64_t, uint64_t, named_tensors, double>::with<uint64_t>,
  caf::replies_to<stats_atom>::with<double, uint64_t>, caf::replies_to<save_atom>::with<ps_state>>;

/// A training worker's spawn argument: the job it trains (a name its node knows, with the
/// job's options as JSON text), its index among the workers, the parameter servers (variable i
/// of the model lives on servers[i % size]) and the global step to stop at. A worker trains
/// until the global step reaches max_steps, then exits normally, so that a supervisor
/// restarts it only after a failure.
struct worker_config {
  std::string job;
  std::string options;
  uint32_t index = 0;
  std::vector<parameter_server_actor> servers;
  uint64_t max_steps = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_config& x) {
  return f(caf::meta::type_name("worker_config"), x.job, x.options, x.index, x.servers,
           x.max_steps);
}

} // namespace darcy
