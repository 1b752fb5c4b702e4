// The client side of the parameter servers, as a training loop uses them: each variable lives
// on the server its placement names (variable i on server i % size by default), the global step is
// server 0's count of applied steps, and every call blocks its caller until each server has
// answered (or the timeout passed). With an attempt timeout, a request unanswered within it is sent
// again (lost messages); pushes are numbered, so that a server applies each one once however often
// it arrives, and loads carry an id, so that a server applies each load once.
//
//   parameter_servers ps{sys, servers, std::chrono::seconds(10)};
//   ps.initialize(vars, optimizer, 0);    // the chief, once
//   auto step = ps.pull(vars);            // a worker, before each step
//   step = ps.push(vars, loss);           // ... and its gradients and loss after it
#pragma once

#include <chrono>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/scoped_actor.hpp>

#include "compute/nn/optimizers.hpp"
#include "messages/estimator/estimator_interfaces.hpp"
#include "ops/estimator/variable_placement.hpp"

namespace darcy::ops::estimator {

/// A sum of training losses and how many there were.
struct loss_totals {
  double sum = 0;
  uint64_t count = 0;
};

class parameter_servers {
public:
  /// Precondition: `servers` is not empty. One object per thread: calls are not thread-safe.
  /// Each call gives up after `timeout`; within it, a request unanswered after
  /// `attempt_timeout` (0: the whole timeout) is sent again.
  parameter_servers(caf::actor_system& sys, std::vector<parameter_server_actor> servers,
                    std::chrono::milliseconds timeout,
                    std::chrono::milliseconds attempt_timeout = std::chrono::milliseconds{0});

  size_t size() const { return servers_.size(); }

  /// Where the variables live from now on (empty: round robin). Every client of the same
  /// servers must use the same placement; calls fail with errc::invalid_config when it gives
  /// an entry per variable that is not a server.
  void set_placement(variable_placement placement) { placement_ = std::move(placement); }

  /// Loads every server with its share of `vars`, their moments in `opt` and `step` as the
  /// global step. Each server's load carries a random load_id: it is sent again after an
  /// attempt timeout, and a server applies it once, so that a late copy cannot undo the steps
  /// applied since. Variables are assigned by position, so every caller must list the same
  /// variables in the same order.
  caf::error initialize(const variable_list& vars, const compute::nn::optimizer& opt,
                        uint64_t step);

  /// Copies the servers' values into `vars`; returns the global step. errc::unavailable until
  /// the chief has initialised them; errc::dimension_mismatch when they hold another model.
  caf::expected<uint64_t> pull(const variable_list& vars);

  /// The global step alone (server 0's count), without copying any variable into place.
  caf::expected<uint64_t> global_step();

  /// As pull, retrying errc::unavailable (a worker that started before the chief loaded the
  /// servers) until `patience` has passed.
  caf::expected<uint64_t> pull_when_ready(const variable_list& vars,
                                          std::chrono::milliseconds patience);

  /// Sends the gradients of `vars` and the step's training loss (NaN: none) to every server
  /// (those without variables take an empty step); returns the global step after this step.
  caf::expected<uint64_t> push(const variable_list& vars, double loss);

  /// The finite losses of the steps server 0 has applied since it was last loaded.
  caf::expected<loss_totals> losses();

  /// The servers' whole state into `vars` and `opt`; returns the global step.
  caf::expected<uint64_t> fetch_state(const variable_list& vars, compute::nn::optimizer& opt);

private:
  /// The positions in `vars` of each server's variables, in order, by the placement.
  caf::expected<std::vector<std::vector<size_t>>> owned(const variable_list& vars) const;
  /// The variables of each server, in order.
  caf::expected<std::vector<variable_list>> shares(const variable_list& vars) const;
  uint32_t count() const { return static_cast<uint32_t>(servers_.size()); }

  /// One request to server s and its reply into `f`, sent again each time `attempt` passes
  /// without an answer, until the timeout.
  template <class... Rs, class F, class... Ts>
  caf::error call(size_t s, std::chrono::milliseconds attempt, F f, const Ts&... xs);

  /// One request to every server, all sent before any answer is awaited, so that the servers
  /// work in parallel: `args(s)` gives server s's request as a tuple, `f(s, replies...)` takes
  /// its answer. Servers unanswered within the attempt timeout are asked again; the first
  /// error that is not a timeout ends the call.
  template <class... Rs, class Args, class F>
  caf::error call_all(Args args, F f);

  /// Each call sends from a scoped actor of its own: a persistent one would collect the
  /// timeout message of every answered request, which CAF delivers once the wait has passed
  /// and a blocking actor never drops.
  caf::actor_system* system_;
  std::vector<parameter_server_actor> servers_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds attempt_timeout_;
  /// This client's name in its pushes (random, never 0) and the number of its last push.
  uint64_t client_;
  uint64_t seq_ = 0;
  variable_placement placement_;
};

} // namespace darcy::ops::estimator
