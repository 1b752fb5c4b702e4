// `darcy node`: starts one cluster node and serves until SIGTERM.
#include <chrono>
#include <iostream>

#include "actors/actor_types.hpp"
#include "apps/cli/commands.hpp"
#include "apps/cli/plugin_option.hpp"
#include "apps/estimator/estimator_jobs.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "runtime/node.hpp"

namespace darcy::apps {

void add_node_command(CLI::App& app, int& exit_code) {
  struct flags {
    std::string name, listen, advertise, join, config, http;
    int64_t heartbeat_interval_ms = 0, heartbeat_timeout_ms = 0, prune_after_ms = 0;
    size_t threads = 0;
    bool chaos = false;
    std::string embedding_service, embedding_checkpoint_dir;
    std::vector<std::string> embedding_nodes, plugins;
    size_t embedding_shards = 1;
    int64_t embedding_timeout_ms = 5000;
  };
  auto f = std::make_shared<flags>();
  auto cmd = app.add_subcommand("node", "Start a cluster node (a seed unless --join is given)");
  // Each flag can also come from the environment, as container platforms pass settings; a
  // flag given on the command line wins over its variable, and both over the TOML file.
  cmd->add_option("--name", f->name, "Node name, unique in the cluster")->envname("DARCY_NAME");
  cmd->add_option("--listen", f->listen, "HOST:PORT to listen on (port 0: any free port)")
    ->envname("DARCY_LISTEN");
  cmd
    ->add_option("--advertise", f->advertise,
                 "Host other nodes reach this one at (default: the listen host; required "
                 "when listening on 0.0.0.0)")
    ->envname("DARCY_ADVERTISE");
  cmd->add_option("--join", f->join, "HOST:PORT of the seed to join (a DNS name works)")
    ->envname("DARCY_JOIN");
  cmd
    ->add_option("--http", f->http,
                 "HOST:PORT of the status page and GET /metrics (default: the listen host, any "
                 "free port), or off")
    ->envname("DARCY_HTTP");
  cmd->add_option("--config", f->config, "TOML config file; flags override it")
    ->envname("DARCY_NODE_CONFIG");
  cmd
    ->add_option("--heartbeat-interval-ms", f->heartbeat_interval_ms,
                 "Heartbeat period (0: the config's, or the default)")
    ->check(CLI::Range(int64_t{0}, int64_t{86400000}))
    ->envname("DARCY_HEARTBEAT_INTERVAL_MS");
  cmd
    ->add_option("--heartbeat-timeout-ms", f->heartbeat_timeout_ms,
                 "Silence after which the seed declares a member down")
    ->check(CLI::Range(int64_t{0}, int64_t{86400000}))
    ->envname("DARCY_HEARTBEAT_TIMEOUT_MS");
  cmd
    ->add_option("--prune-after-ms", f->prune_after_ms,
                 "How long the seed remembers a member that went down or left")
    ->check(CLI::Range(int64_t{0}, int64_t{86400000}))
    ->envname("DARCY_PRUNE_AFTER_MS");
  cmd->add_option("--threads", f->threads, "Scheduler threads (default: one per core)")
    ->envname("DARCY_THREADS");
  cmd
    ->add_flag("--chaos", f->chaos,
               "Put spawned actors behind chaos gates, so that `darcy chaos disrupt` reaches "
               "them (one more hop per message)")
    ->envname("DARCY_CHAOS");
  cmd
    ->add_option("--embedding-service", f->embedding_service,
                 "Host an embedding service's master on this node, published under this name "
                 "for the sessions that name it (trainer processes sharing its tables)")
    ->envname("DARCY_EMBEDDING_SERVICE");
  cmd
    ->add_option("--embedding-shards", f->embedding_shards,
                 "With --embedding-service: its shards on each member")
    ->check(CLI::Range(size_t{1}, size_t{1024}));
  cmd
    ->add_option("--embedding-nodes", f->embedding_nodes,
                 "With --embedding-service: the members that hold its shards (default: every "
                 "member up when this node starts)")
    ->delimiter(',');
  cmd->add_option("--embedding-checkpoint-dir", f->embedding_checkpoint_dir,
                  "With --embedding-service: supervise its shards; a shard whose node dies "
                  "starts again elsewhere, refilled from the newest checkpoint saved here");
  cmd
    ->add_option("--embedding-timeout-ms", f->embedding_timeout_ms,
                 "With --embedding-service: how long its master waits for a shard")
    ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  add_plugin_option(cmd, f->plugins);
  cmd->callback([f, &exit_code] {
    if ((exit_code = load_plugins(f->plugins, "node")) != 0)
      return;
    runtime::node_options opts;
    if (!f->config.empty())
      if (auto err = runtime::load_node_config(f->config, opts)) {
        exit_code = fail(render(err));
        return;
      }
    if (!f->name.empty())
      opts.name = f->name;
    if (!f->advertise.empty())
      opts.advertise = f->advertise;
    if (!f->http.empty()) {
      auto http = runtime::parse_http_address(f->http);
      if (!http) {
        exit_code = fail("--http", http.error());
        return;
      }
      opts.http = *http;
    }
    for (auto [flag, text] : {std::pair{"--listen", &f->listen}, {"--join", &f->join}}) {
      if (text->empty())
        continue;
      auto parsed = runtime::parse_host_port(*text);
      if (!parsed) {
        exit_code = fail(std::string{flag} + ": " + render(parsed.error()));
        return;
      }
      if (text == &f->listen)
        opts.listen = *parsed;
      else
        opts.join = *parsed;
    }
    if (f->heartbeat_interval_ms > 0)
      opts.heartbeat_interval = std::chrono::milliseconds{f->heartbeat_interval_ms};
    if (f->heartbeat_timeout_ms > 0)
      opts.heartbeat_timeout = std::chrono::milliseconds{f->heartbeat_timeout_ms};
    if (f->prune_after_ms > 0)
      opts.prune_after = std::chrono::milliseconds{f->prune_after_ms};
    if (f->threads > 0)
      opts.threads = f->threads;
    if (f->chaos)
      opts.chaos = true;
    // Any node can host the Estimator's parameter servers and training workers.
    auto hook = [](runtime::system_config& cfg) {
      actors::register_actor_types(cfg);
      actors::add_training_worker_type(
        cfg, ops::estimator::training_jobs_of(estimator_apps::estimator_jobs()));
    };
    if (f->embedding_service.empty()) {
      auto err = runtime::run_node(opts, hook);
      exit_code = err ? fail(render(err)) : 0;
      return;
    }
    runtime::block_shutdown_signals();
    auto err = runtime::run_node_with(
      opts, hook, [&](caf::actor_system& sys, const runtime::node_services&) -> caf::error {
        auto host =
          ops::session::attach(sys, {.timeout = std::chrono::milliseconds{f->embedding_timeout_ms},
                                     .shards = f->embedding_shards,
                                     .supervise_shards = !f->embedding_checkpoint_dir.empty(),
                                     .shard_checkpoint_dir = f->embedding_checkpoint_dir,
                                     .shard_nodes = f->embedding_nodes});
        if (!host)
          return std::move(host.error());
        if (auto err = (*host)->publish_embeddings(f->embedding_service, opts.name))
          return err;
        std::cout << "darcy node " << opts.name << " hosts embedding service "
                  << f->embedding_service << std::endl;
        runtime::wait_for_shutdown();
        return {};
      });
    exit_code = err ? fail(render(err)) : 0;
  });
}

} // namespace darcy::apps
