// Two `darcy node` processes on 127.0.0.1 that a benchmark starts for its remote paths: a seed
// and a member that joined it. They stop (SIGTERM, then a wait) on stop() or when the pair is
// destroyed.
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "runtime/process/process.hpp"

namespace darcy::apps {

struct node_pair {
  runtime::launched_node a;
  runtime::launched_node b;
  node_pair(runtime::launched_node seed, runtime::launched_node member)
    : a(std::move(seed)), b(std::move(member)) {}
  node_pair(node_pair&&) = default;
  ~node_pair() { stop(); }

  /// SIGTERM to both, then waits for them; does nothing the second time.
  void stop();
};

/// Starts the seed `<prefix>-a` and the member `<prefix>-b`; fails with the node's stderr when
/// either does not come up within 30 s.
caf::expected<node_pair> start_node_pair(const std::string& prefix);

} // namespace darcy::apps
