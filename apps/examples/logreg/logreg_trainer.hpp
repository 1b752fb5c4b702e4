// The example app's own actor: a logistic regression trainer whose weights live in the
// embedding service, one dim-1 row per hashed feature. For each batch it looks the weights up,
// computes the log loss's gradient, and sends it back as an update that the shards apply with
// their optimizer. It keeps no weights itself, so a trainer that a supervisor restarts goes on
// from the weights its predecessor left in the service.
#pragma once

#include <cstdint>
#include <vector>

#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "apps/examples/logreg/logreg_data.hpp"
#include "apps/examples/logreg/logreg_messages.hpp"

namespace darcy::examples {

using logreg_trainer_actor = caf::typed_actor<caf::reacts_to<step_atom>>;

struct logreg_trainer_state {
  logreg_config config;
  std::vector<labelled_example> examples;
  uint32_t epoch = 0;
  /// The first example of the next batch.
  size_t next = 0;
  int64_t step = 0;
  double loss_sum = 0;
  uint64_t correct = 0;
  static inline const char* name = logreg_trainer_name;
};

/// Trains config.epochs epochs, reporting to config.listener, then exits normally. Exits with
/// the error when the data cannot be read or the service fails a request.
logreg_trainer_actor::behavior_type logreg_trainer(
  logreg_trainer_actor::stateful_pointer<logreg_trainer_state> self, logreg_config config);

} // namespace darcy::examples
