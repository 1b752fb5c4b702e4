// darcy.LocalCluster's core: real `darcy node` processes on 127.0.0.1 (darcy_testing's
// local_cluster) with the fault injection users write in C++ tests: kill, pause and resume,
// restart, new members, dropped and delayed messages, and a read of the registry.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "ops/session.hpp"
#include "ops/testing/local_cluster.hpp"

namespace darcy::python {

class cluster_handle {
public:
  explicit cluster_handle(testing::local_cluster_options opts);
  ~cluster_handle();

  /// The seed as HOST:PORT, for darcy.Session.connect.
  std::string seed() const;
  pybind11::list names() const;

  /// Node `node` (its name or index): SIGKILL, SIGSTOP, SIGCONT, SIGTERM, start again.
  void kill(const pybind11::handle& node);
  void pause(const pybind11::handle& node);
  void resume(const pybind11::handle& node);
  void stop(const pybind11::handle& node);
  void restart(const pybind11::handle& node);
  /// A new member, started with `args` added to its flags; its name.
  std::string add_node(const std::string& name, const std::vector<std::string>& args);

  /// Drops and delays a seeded share of the messages of `service` (or, with node set, of
  /// every gate of that node) until healed; the nodes run with chaos on. Answers the counts
  /// of the gate's plan as a dict (forwarded, dropped, delayed).
  pybind11::dict disrupt(const std::string& target, bool node, double drop, double delay,
                         int64_t delay_ms, uint64_t seed);
  pybind11::dict heal(const std::string& target, bool node);

  /// The registry's view: {"seed", "members": [{name, host, port, pid, state, reason}],
  /// "services": [{name, node}]}.
  pybind11::dict status();

  /// SIGKILLs every node; later calls raise darcy.Unavailable.
  void close();

private:
  testing::local_cluster& cluster();
  /// f(cluster, index of `node`) with the GIL released; raises its error.
  void act(const pybind11::handle& node,
           const std::function<caf::error(testing::local_cluster&, size_t)>& f);
  size_t index_of(const pybind11::handle& node);
  ops::session& client();

  std::unique_ptr<testing::local_cluster> cluster_;
  std::unique_ptr<ops::session> client_;
};

void bind_local_cluster(pybind11::module_& m);

} // namespace darcy::python
