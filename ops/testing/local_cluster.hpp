// darcy_testing: real `darcy node` processes for an app's own fault-tolerance tests, on
// 127.0.0.1 or each in a network namespace of its own. Start N nodes (the first is the seed),
// kill one (SIGKILL), pause and resume it (SIGSTOP, SIGCONT), cut it off the network and heal
// it (namespaces), restart it under its name and address, add a replacement member, and watch
// the registry through a read-only view. Any test framework can use it.
//
//   auto c = testing::local_cluster::start({.nodes = 3, .binary = "/usr/local/bin/darcy"});
//   auto s = ops::session::open({.seed = (*c)->seed()});        // the app under test
//   (*c)->kill(2);
//   auto err = (*c)->wait_for([](const cluster_status& st) {
//     return testing::state_of(st, "node-2") == member_state::down; }, std::chrono::seconds(10));
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "messages/cluster/membership.hpp"
#include "ops/session.hpp"
#include "runtime/process/netns.hpp"
#include "runtime/process/process.hpp"

namespace darcy::testing {

struct local_cluster_options {
  /// Nodes, the seed included (at least 1).
  size_t nodes = 3;
  /// The `darcy` binary; empty: $DARCY_BINARY.
  std::string binary;
  /// Nodes are PREFIX-0 (the seed), PREFIX-1, ...
  std::string name_prefix = "node";
  /// Fast failure detection, so that tests see a dead member within seconds.
  std::chrono::milliseconds heartbeat_interval{200};
  std::chrono::milliseconds heartbeat_timeout{2000};
  size_t threads = 1;
  /// Start the nodes with --chaos (actors behind chaos gates, for `darcy chaos disrupt`).
  bool chaos = false;
  /// More flags for every `darcy node`.
  std::vector<std::string> node_args;
  /// The cluster secret, for the nodes and for the fixture's own client.
  std::string secret_file;
  /// TLS between the nodes (`darcy --tls-dir`), and for this process's own actor systems from
  /// now on, the fixture's client included (runtime::set_process_tls). Empty: none.
  std::string tls_dir;
  /// How long a node may take to listen, and the view's requests to answer.
  std::chrono::milliseconds patience{30000};
  /// Each node in a network namespace of its own (runtime/process/netns.hpp; needs root), so that
  /// partition() can cut it off. start() fails with errc::unsupported where that is not
  /// possible: check runtime::netns_network::available() to skip instead.
  bool netns = false;
};

/// The state of member `name` in `st`; nullopt when the registry does not list it.
std::optional<member_state> state_of(const cluster_status& st, const std::string& name);

class local_cluster {
public:
  /// Starts the nodes one after another, each once the previous one listens. errc::invalid_config
  /// for no binary or no node; a node's own error (with its stderr) when one does not start.
  static caf::expected<std::unique_ptr<local_cluster>> start(local_cluster_options o = {});

  /// SIGKILLs every node still running.
  ~local_cluster();

  size_t size() const { return nodes_.size(); }
  const std::string& name(size_t i) const { return nodes_.at(i).name; }
  const runtime::host_port& address(size_t i) const { return nodes_.at(i).address; }
  const runtime::host_port& seed() const { return address(0); }
  /// The node's process id; -1 once it was killed or stopped.
  pid_t pid(size_t i) const;

  /// SIGKILLs node i and reaps it.
  caf::error kill(size_t i);
  /// SIGTERMs node i (a member leaves the cluster) and waits for it to exit.
  caf::error stop(size_t i);
  /// SIGSTOP and SIGCONT: a node that keeps its connections but misses its heartbeats.
  caf::error pause(size_t i);
  caf::error resume(size_t i);
  /// Cuts node i off the network (its link down: connections stay open, packets are lost), and
  /// heals it. errc::unsupported without namespaces.
  caf::error partition(size_t i);
  caf::error heal(size_t i);
  /// Starts node i again, killed or stopped, under its name and at its address, with `args`
  /// added to its flags.
  caf::error restart(size_t i, const std::vector<std::string>& args = {});
  /// Starts a new member (a replacement after a kill) named `name` (default: the next
  /// PREFIX-N), with `args` added to its flags; returns its index.
  caf::expected<size_t> add_node(std::string name = {}, const std::vector<std::string>& args = {});

  /// The registry's view of the cluster, through the fixture's own client session.
  caf::expected<cluster_status> status();
  /// Polls status() until `pred` holds; errc::timeout naming the last status otherwise.
  caf::error wait_for(const std::function<bool(const cluster_status&)>& pred,
                      std::chrono::milliseconds timeout);

private:
  struct node {
    std::string name;
    runtime::host_port address;
    std::optional<runtime::child_process> process;
  };

  explicit local_cluster(local_cluster_options o) : opts_(std::move(o)) {}
  /// Launches `name`, listening on `listen`, joining the seed unless it is node 0.
  caf::expected<runtime::launched_node> launch(size_t index, const std::string& name,
                                               const std::string& listen,
                                               const std::vector<std::string>& args);
  node& at(size_t i);
  /// Sends `sig` to node i's process; errc::invalid_argument when it is not running.
  caf::error signal(size_t i, int sig);

  local_cluster_options opts_;
  /// Declared before the nodes, so that it goes after them.
  std::unique_ptr<runtime::netns_network> net_;
  std::vector<node> nodes_;
  /// The view's client, connected on first use.
  std::unique_ptr<ops::session> client_;
};

} // namespace darcy::testing
