#include "actors/estimator/training_worker.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "messages/error.hpp"

namespace darcy::actors {

namespace {

using run_atom = caf::atom_constant<caf::atom("run")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

caf::behavior training_worker(caf::event_based_actor* self, worker_config config,
                              std::shared_ptr<const training_jobs> jobs) {
  auto it = jobs->find(config.job);
  if (it == jobs->end()) {
    self->quit(
      make_error(errc::invalid_config, "this node has no estimator job '" + config.job + "'"));
    return {};
  }
  // Set when the worker exits for any reason: the loop then stops after its current step.
  auto stop = std::make_shared<std::atomic<bool>>(false);
  self->attach_functor([stop] { *stop = true; });
  self->spawn<caf::detached>(
    [job = it->second, config, stop,
     parent = caf::actor_cast<caf::actor>(self)](caf::event_based_actor* helper) -> caf::behavior {
      auto err = job(helper->system(), config, *stop);
      caf::anon_send(parent, done_atom::value, std::move(err));
      helper->quit();
      return {};
    });
  return {
    [self](done_atom, caf::error& err) {
      self->quit(err ? std::move(err) : caf::error{caf::exit_reason::normal});
    },
  };
}

} // namespace

void add_training_worker_type(runtime::system_config& cfg,
                              std::shared_ptr<const training_jobs> jobs) {
  cfg.add_actor_type(training_worker_name,
                     [jobs](caf::event_based_actor* self, worker_config config) {
                       return training_worker(self, std::move(config), jobs);
                     });
}

} // namespace darcy::actors
