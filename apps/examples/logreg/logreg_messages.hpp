// The example app's vocabulary (docs/writing-an-app.md): what the driver tells a logistic
// regression trainer, and what the trainer reports back. Both cross nodes, so every process of
// the app registers them with register_logreg_types, next to Darcy's own types.
//
//   runtime::run_node(opts, [](runtime::system_config& cfg) {
//     actors::register_actor_types(cfg);
//     examples::register_logreg_types(cfg);
//   });
#pragma once

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include "messages/embedding/embedding_interfaces.hpp"
#include "runtime/system_config.hpp"

namespace darcy::examples {

using step_atom = caf::atom_constant<caf::atom("lr_step")>;

/// Spawn name of the trainer, and the service name the supervisor registers it under.
inline constexpr const char* logreg_trainer_name = "examples.logreg_trainer";
inline constexpr const char* logreg_trainer_service = "logreg_trainer";

struct logreg_config {
  /// "label<TAB>text" lines; the path must be readable where the trainer runs.
  std::string data;
  /// The embedding that holds one weight (dim 1) per hashed feature, and the bias.
  std::string embedding = "logreg";
  /// Features are hashed into this many buckets ("f<bucket>" keys).
  uint64_t buckets = 1 << 18;
  uint32_t batch = 64;
  uint32_t epochs = 5;
  embedding_master_actor master;
  /// Receives logreg_progress after every epoch and when training is done.
  caf::actor listener;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, logreg_config& x) {
  return f(caf::meta::type_name("logreg_config"), x.data, x.embedding, x.buckets, x.batch, x.epochs,
           x.master, x.listener);
}

struct logreg_progress {
  uint32_t epoch = 0;
  /// Mean log loss and accuracy of the epoch's predictions, made before each batch's update.
  double loss = 0;
  double accuracy = 0;
  bool done = false;
  /// The node the trainer runs on.
  std::string node;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, logreg_progress& x) {
  return f(caf::meta::type_name("logreg_progress"), x.epoch, x.loss, x.accuracy, x.done, x.node);
}

/// Adds the trainer's actor type and the app's message types to `cfg`.
void register_logreg_types(runtime::system_config& cfg);

} // namespace darcy::examples
