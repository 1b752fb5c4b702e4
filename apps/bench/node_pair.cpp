#include "apps/bench/node_pair.hpp"

#include <chrono>
#include <csignal>

namespace darcy::apps {

void node_pair::stop() {
  for (auto* node : {&b, &a}) {
    if (node->process.pid() <= 0) // moved from
      continue;
    node->process.signal(SIGTERM);
    node->process.wait(std::chrono::seconds(30));
  }
}

caf::expected<node_pair> start_node_pair(const std::string& prefix) {
  auto exe = runtime::sibling_executable("darcy");
  auto timeout = std::chrono::seconds(30);
  auto a = runtime::launch_node({exe, "node", "--name", prefix + "-a", "--listen", "127.0.0.1:0"},
                                timeout);
  if (!a)
    return std::move(a.error());
  auto b = runtime::launch_node({exe, "node", "--name", prefix + "-b", "--listen", "127.0.0.1:0",
                                 "--join", runtime::to_string(a->address)},
                                timeout);
  if (!b)
    return std::move(b.error());
  return node_pair{std::move(*a), std::move(*b)};
}

} // namespace darcy::apps
