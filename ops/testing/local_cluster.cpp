#include "ops/testing/local_cluster.hpp"

#include <signal.h>

#include <cstdlib>
#include <thread>

#include "messages/error.hpp"
#include "runtime/cluster/cluster_secret.hpp"
#include "runtime/tls.hpp"

namespace darcy::testing {

std::optional<member_state> state_of(const cluster_status& st, const std::string& name) {
  for (auto& m : st.members)
    if (m.name == name)
      return m.state;
  return std::nullopt;
}

caf::expected<std::unique_ptr<local_cluster>> local_cluster::start(local_cluster_options o) {
  if (o.binary.empty())
    if (auto* env = std::getenv("DARCY_BINARY"))
      o.binary = env;
  if (o.binary.empty())
    return make_error(
      errc::invalid_config,
      "local_cluster: no darcy binary (set local_cluster_options::binary or DARCY_BINARY)");
  if (o.nodes == 0)
    return make_error(errc::invalid_config, "local_cluster: a cluster needs at least one node");
  if (!o.secret_file.empty()) {
    auto secret = runtime::read_secret_file(o.secret_file);
    if (!secret)
      return std::move(secret.error());
    runtime::set_client_credential(runtime::credential_of(*secret));
  }
  if (!o.tls_dir.empty()) {
    auto files = runtime::read_tls_dir(o.tls_dir);
    if (!files)
      return std::move(files.error());
    runtime::set_process_tls(*files);
  }
  std::unique_ptr<local_cluster> c{new local_cluster(std::move(o))};
  if (c->opts_.netns) {
    auto net = runtime::netns_network::create(0);
    if (!net)
      return std::move(net.error());
    c->net_ = std::move(*net);
  }
  for (size_t i = 0; i < c->opts_.nodes; ++i)
    if (auto added = c->add_node(); !added)
      return std::move(added.error());
  return c;
}

local_cluster::~local_cluster() {
  client_.reset();
  for (auto& n : nodes_)
    n.process.reset(); // child_process SIGKILLs a running child; then net_ goes
}

caf::expected<runtime::launched_node> local_cluster::launch(size_t index, const std::string& name,
                                                            const std::string& listen,
                                                            const std::vector<std::string>& args) {
  std::vector<std::string> argv{opts_.binary};
  if (!opts_.secret_file.empty())
    argv.insert(argv.end(), {"--secret-file", opts_.secret_file});
  if (!opts_.tls_dir.empty())
    argv.insert(argv.end(), {"--tls-dir", opts_.tls_dir});
  argv.insert(
    argv.end(),
    {"node", "--name", name, "--listen", listen, "--threads", std::to_string(opts_.threads),
     "--heartbeat-interval-ms", std::to_string(opts_.heartbeat_interval.count()),
     "--heartbeat-timeout-ms", std::to_string(opts_.heartbeat_timeout.count())});
  if (index > 0)
    argv.insert(argv.end(), {"--join", to_string(nodes_.front().address)});
  if (opts_.chaos)
    argv.push_back("--chaos");
  argv.insert(argv.end(), opts_.node_args.begin(), opts_.node_args.end());
  argv.insert(argv.end(), args.begin(), args.end());
  if (net_)
    argv = net_->in_namespace(index, argv);
  return runtime::launch_node(argv, opts_.patience);
}

local_cluster::node& local_cluster::at(size_t i) {
  return nodes_.at(i);
}

pid_t local_cluster::pid(size_t i) const {
  auto& p = nodes_.at(i).process;
  return p ? p->pid() : -1;
}

caf::expected<size_t> local_cluster::add_node(std::string name,
                                              const std::vector<std::string>& args) {
  if (name.empty())
    name = opts_.name_prefix + "-" + std::to_string(nodes_.size());
  auto index = nodes_.size();
  std::string host = "127.0.0.1";
  if (net_) {
    // Node i lives in namespace i; a namespace left by a node that failed to start is reused.
    if (net_->size() <= index)
      if (auto made = net_->add_node(); !made)
        return std::move(made.error());
    host = net_->address(index);
  }
  auto launched = launch(index, name, host + ":0", args);
  if (!launched)
    return make_error(errc::io_error, "local_cluster: node " + name +
                                        " did not start: " + render(launched.error()));
  nodes_.push_back({name, launched->address, std::move(launched->process)});
  return nodes_.size() - 1;
}

caf::error local_cluster::kill(size_t i) {
  auto& n = at(i);
  if (!n.process)
    return make_error(errc::invalid_argument, "local_cluster: " + n.name + " is not running");
  n.process->signal(SIGKILL);
  n.process->wait(opts_.patience);
  n.process.reset();
  return {};
}

caf::error local_cluster::stop(size_t i) {
  auto& n = at(i);
  if (!n.process)
    return make_error(errc::invalid_argument, "local_cluster: " + n.name + " is not running");
  n.process->signal(SIGTERM);
  auto code = n.process->wait(opts_.patience);
  n.process.reset();
  return code ? caf::error{} : std::move(code.error());
}

caf::error local_cluster::pause(size_t i) {
  return signal(i, SIGSTOP);
}

caf::error local_cluster::resume(size_t i) {
  return signal(i, SIGCONT);
}

caf::error local_cluster::signal(size_t i, int sig) {
  auto& n = at(i);
  if (!n.process)
    return make_error(errc::invalid_argument, "local_cluster: " + n.name + " is not running");
  n.process->signal(sig);
  return {};
}

caf::error local_cluster::partition(size_t i) {
  at(i);
  if (!net_)
    return make_error(errc::unsupported, "local_cluster: partitions need netns = true");
  return net_->cut(i);
}

caf::error local_cluster::heal(size_t i) {
  at(i);
  if (!net_)
    return make_error(errc::unsupported, "local_cluster: partitions need netns = true");
  return net_->heal(i);
}

caf::error local_cluster::restart(size_t i, const std::vector<std::string>& args) {
  auto& n = at(i);
  if (n.process)
    return make_error(errc::invalid_argument, "local_cluster: " + n.name + " is still running");
  auto launched = launch(i, n.name, to_string(n.address), args);
  if (!launched)
    return launched.error();
  n.process = std::move(launched->process);
  return {};
}

caf::expected<cluster_status> local_cluster::status() {
  if (!client_) {
    ops::session_options so;
    so.seed = seed();
    so.name = "local-cluster-view";
    so.threads = 1;
    so.timeout = std::chrono::milliseconds(2000);
    auto s = ops::session::open(so);
    if (!s)
      return std::move(s.error());
    client_ = std::move(*s);
  }
  auto st = client_->status();
  if (!st)
    client_.reset(); // a restarted seed: connect again next time
  return st;
}

caf::error local_cluster::wait_for(const std::function<bool(const cluster_status&)>& pred,
                                   std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  std::string last = "no answer";
  for (;;) {
    if (auto st = status()) {
      if (pred(*st))
        return {};
      last.clear();
      for (auto& m : st->members)
        last += m.name + ":" + to_string(m.state) + " ";
    } else {
      last = render(st.error());
    }
    if (std::chrono::steady_clock::now() >= until)
      return make_error(errc::timeout, "local_cluster: the condition did not hold within " +
                                         std::to_string(timeout.count()) + " ms (last: " + last +
                                         ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

} // namespace darcy::testing
