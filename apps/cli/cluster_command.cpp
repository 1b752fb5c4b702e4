// `darcy cluster`: `status` prints members, their services and uptime, as the seed's registry
// sees them; `up` starts a local cluster of `darcy node` processes on 127.0.0.1 that outlive
// the command, and writes DIR/cluster.json; `down` stops the nodes that file lists.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "apps/cli/commands.hpp"
#include "apps/cli/status_table.hpp"
#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "runtime/cluster/cluster_file.hpp"
#include "runtime/process/netns.hpp"
#include "runtime/process/process.hpp"
#include "runtime/tls.hpp"

namespace darcy::apps {

namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

/// The cluster file named by `where`: the file itself, or DIR/cluster.json.
std::string cluster_path(const std::string& where) {
  std::error_code ec;
  return fs::is_directory(where, ec) ? (fs::path{where} / runtime::cluster_file_name).string()
                                     : where;
}

bool alive(int64_t pid) {
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
}

/// Whether `pid` is still the `darcy node` named `name` (and not a process that reused it).
bool is_node(int64_t pid, const std::string& name) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/cmdline"};
  std::string cmdline{std::istreambuf_iterator<char>{in}, {}};
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline.find(" node ") != std::string::npos &&
         cmdline.find(" " + name + " ") != std::string::npos;
}

/// Waits until the node `pid`, logging to `log`, prints its address. errc::io_error with the
/// log's end when it exits first, errc::timeout after `patience`.
caf::expected<runtime::host_port> wait_for_address(pid_t pid, const std::string& log,
                                                   std::chrono::seconds patience) {
  auto deadline = clock::now() + patience;
  constexpr std::string_view marker = " listening on ";
  while (clock::now() < deadline) {
    auto text = base::read_file(log);
    if (text) {
      auto at = text->find(marker);
      if (at != std::string::npos) {
        auto end = text->find('\n', at);
        if (end != std::string::npos)
          return runtime::parse_host_port(
            text->substr(at + marker.size(), end - at - marker.size()));
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return make_error(
        errc::io_error,
        "the node exited before it listened; " + log + ":\n" +
          (text ? text->substr(text->size() > 2000 ? text->size() - 2000 : 0) : ""));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return make_error(errc::timeout, "the node printed no address in " +
                                     std::to_string(patience.count()) + " s; see " + log);
}

/// SIGTERMs every node of `c` still running, members first, and SIGKILLs those still there
/// after `patience`. Returns how many it stopped.
size_t stop_nodes(const runtime::cluster_file& c, std::chrono::seconds patience) {
  std::vector<const runtime::cluster_member*> running;
  for (auto it = c.nodes.rbegin(); it != c.nodes.rend(); ++it)
    if (alive(it->pid) && is_node(it->pid, it->name))
      running.push_back(&*it);
  for (auto* n : running) {
    ::kill(static_cast<pid_t>(n->pid), SIGTERM);
    // A member leaves through the seed: let each go before the seed does.
    auto deadline = clock::now() + patience;
    while (alive(n->pid) && clock::now() < deadline) {
      ::waitpid(static_cast<pid_t>(n->pid), nullptr, WNOHANG);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (alive(n->pid))
      ::kill(static_cast<pid_t>(n->pid), SIGKILL);
  }
  return running.size();
}

struct up_flags {
  bool netns = false;
  size_t nodes = 3;
  std::string dir = "build/cluster";
  std::string prefix = "node";
  size_t threads = 1;
  bool chaos = false;
};

caf::error cluster_up(const up_flags& f, const std::string& secret_file) {
  auto path = (fs::path{f.dir} / runtime::cluster_file_name).string();
  if (auto old = runtime::read_cluster_file(path)) {
    for (auto& n : old->nodes)
      if (alive(n.pid) && is_node(n.pid, n.name))
        return make_error(errc::invalid_config, "a cluster is already up in " + f.dir + " (node " +
                                                  n.name + ", pid " + std::to_string(n.pid) +
                                                  "): darcy cluster down --dir " + f.dir);
  }
  std::error_code ec;
  fs::create_directories(f.dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create " + f.dir + ": " + ec.message());
  runtime::cluster_file c;
  if (!secret_file.empty())
    c.secret_file = fs::absolute(secret_file).string();
  std::unique_ptr<runtime::netns_network> net;
  if (f.netns) {
    auto made = runtime::netns_network::create(f.nodes);
    if (!made)
      return std::move(made.error());
    net = std::move(*made);
  }
  for (size_t i = 0; i < f.nodes; ++i) {
    runtime::cluster_member m;
    m.name = f.prefix + "-" + std::to_string(i);
    m.log = fs::absolute(fs::path{f.dir} / (m.name + ".log")).string();
    std::ofstream{m.log, std::ios::trunc};
    std::vector<std::string> argv{runtime::self_executable()};
    if (!c.secret_file.empty())
      argv.insert(argv.end(), {"--secret-file", c.secret_file});
    if (auto& tls = runtime::process_tls())
      argv.insert(argv.end(), {"--tls-dir", fs::absolute(tls->dir).string()});
    auto host = net ? net->address(i) : std::string{"127.0.0.1"};
    argv.insert(argv.end(), {"node", "--name", m.name, "--listen", host + ":0", "--threads",
                             std::to_string(f.threads)});
    if (i > 0)
      argv.insert(argv.end(), {"--join", to_string(c.nodes.front().address)});
    if (f.chaos)
      argv.push_back("--chaos");
    if (net)
      argv = net->in_namespace(i, argv);
    auto pid = runtime::start_detached(argv, m.log);
    if (!pid) {
      stop_nodes(c, std::chrono::seconds(10));
      return std::move(pid.error());
    }
    m.pid = *pid;
    c.nodes.push_back(m);
    auto address = wait_for_address(*pid, m.log, std::chrono::seconds(30));
    if (!address) {
      stop_nodes(c, std::chrono::seconds(10));
      return std::move(address.error());
    }
    c.nodes.back().address = *address;
  }
  if (net)
    c.netns = net->release(); // the namespaces outlive this command; `down` removes them
  if (auto err = runtime::write_cluster_file(path, c)) {
    stop_nodes(c, std::chrono::seconds(10));
    if (!c.netns.empty())
      runtime::netns_network::remove(c.netns);
    return err;
  }
  std::cout << "darcy cluster up: " << c.nodes.size() << " nodes, seed "
            << to_string(c.nodes.front().address) << "\n";
  for (auto& n : c.nodes)
    std::cout << "  " << n.name << "  " << to_string(n.address) << "  pid " << n.pid << "  log "
              << n.log << "\n";
  std::cout << "cluster file: " << path << " (give it to --seed or --cluster instead of an address)"
            << std::endl;
  return {};
}

} // namespace

void add_cluster_command(CLI::App& app, int& exit_code) {
  auto cluster = app.add_subcommand("cluster", "Start, stop or inspect a cluster");
  cluster->require_subcommand(1);
  auto seed = std::make_shared<std::string>();
  auto timeout_ms = std::make_shared<int64_t>(5000);
  auto status = cluster->add_subcommand("status", "Print members, services and uptime");
  status->add_option("--seed", *seed, "HOST:PORT of the seed node, or a cluster file or directory")
    ->required();
  status->add_option("--timeout-ms", *timeout_ms, "Request timeout");
  status->callback([seed, timeout_ms, &exit_code] {
    auto address = runtime::resolve_seed(*seed);
    if (!address) {
      exit_code = fail("--seed", address.error());
      return;
    }
    ops::session_options opts;
    opts.seed = *address;
    opts.name = "cli";
    opts.threads = 1;
    opts.timeout = std::chrono::milliseconds{*timeout_ms};
    auto session = ops::session::open(opts);
    if (!session) {
      exit_code = fail(render(session.error()));
      return;
    }
    auto snapshot = (*session)->status();
    if (!snapshot) {
      exit_code = fail(render(snapshot.error()));
      return;
    }
    print_status(std::cout, *snapshot);
    exit_code = 0;
  });

  auto up_f = std::make_shared<up_flags>();
  auto up = cluster->add_subcommand(
    "up",
    "Start a local cluster: a seed and N-1 members on 127.0.0.1 (or each in a network "
    "namespace), left running");
  up->add_option("--nodes", up_f->nodes, "Nodes, the seed included")->check(CLI::Range(1, 64));
  up->add_option("--dir", up_f->dir, "Where the cluster file and the nodes' logs go");
  up->add_option("--name-prefix", up_f->prefix, "Nodes are PREFIX-0 (the seed), PREFIX-1, ...");
  up->add_option("--threads", up_f->threads, "Scheduler threads of each node")
    ->check(CLI::Range(1, 256));
  up->add_flag("--chaos", up_f->chaos, "Start the nodes with --chaos (for darcy chaos disrupt)");
  up->add_flag("--netns", up_f->netns,
               "Each node in a network namespace of its own, on a bridge this host joins (root)");
  up->callback([up_f, &app, &exit_code] {
    auto* secret = app.get_option("--secret-file");
    auto secret_file = secret->count() > 0 ? secret->as<std::string>() : std::string{};
    auto err = cluster_up(*up_f, secret_file);
    exit_code = err ? fail("cluster up", err) : 0;
  });

  auto down_dir = std::make_shared<std::string>("build/cluster");
  auto patience = std::make_shared<int64_t>(30);
  auto down = cluster->add_subcommand("down", "Stop the nodes of a cluster that `up` started");
  down->add_option("--dir", *down_dir, "The cluster's directory, or its cluster file");
  down
    ->add_option("--timeout-s", *patience, "Wait this long for each node to leave, then SIGKILL it")
    ->check(CLI::Range(1, 3600));
  down->callback([down_dir, patience, &exit_code] {
    auto path = cluster_path(*down_dir);
    auto c = runtime::read_cluster_file(path);
    if (!c) {
      exit_code = fail("cluster down", c.error());
      return;
    }
    auto stopped = stop_nodes(*c, std::chrono::seconds(*patience));
    if (!c->netns.empty())
      if (auto err = runtime::netns_network::remove(c->netns))
        std::cerr << "darcy: warning: " << render(err) << std::endl;
    std::error_code ec;
    fs::remove(path, ec);
    std::cout << "darcy cluster down: stopped " << stopped << " of " << c->nodes.size() << " nodes"
              << std::endl;
    exit_code = 0;
  });
}

} // namespace darcy::apps
