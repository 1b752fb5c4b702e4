// `darcy serve`: the exported models behind the HTTP API (apps/serving/).
#include "apps/cli/commands.hpp"
#include "apps/cli/plugin_option.hpp"
#include "apps/serving/serve_job.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/cluster_file.hpp"

namespace darcy::apps {

void add_serve_command(CLI::App& app, int& exit_code) {
  auto job = std::make_shared<serving::serve_job>();
  auto listen = std::make_shared<std::string>("127.0.0.1:8080");
  auto cluster = std::make_shared<std::string>();
  auto plugins = std::make_shared<std::vector<std::string>>();
  auto cmd = app.add_subcommand(
    "serve",
    "Serve exported models over HTTP: retrieval top-k, Estimator predict, versions, metrics");
  cmd->add_option("--exports", job->exports, "Folder of exports, one folder per model")->required();
  cmd->add_option("--listen", *listen, "HOST:PORT of the HTTP API (port 0: a free port)");
  cmd->add_option("--cluster", *cluster,
                  "Seed HOST:PORT or cluster file: shard servers on its members "
                  "(default: an in-process cluster)");
  cmd
    ->add_option("--embedding-shards", job->embedding_shards,
                 "Estimator models' dynamic embeddings on N shards on each member of --cluster, "
                 "loaded from the export (0: in this process)")
    ->check(CLI::Range(size_t{0}, size_t{1024}));
  cmd
    ->add_option("--replicas", job->replicas.replicas,
                 "Copies of those embedding shards, each on members of its own (member i "
                 "of the cluster's, by name, holds copy i % R); a prediction goes to a live one")
    ->check(CLI::Range(size_t{1}, size_t{64}));
  cmd
    ->add_option("--replica-attempt-ms", job->replicas.attempt_ms,
                 "A prediction's lookups on one copy not answered this long go to the next copy")
    ->check(CLI::Range(uint32_t{1}, uint32_t{600000}));
  cmd->add_option("--config", job->config, "TOML file of tokens, ACLs, quotas and limits");
  cmd->add_option("--sync-dir", job->sync_dir,
                  "Where Estimator models keep the syncs pushed to them as messages, a folder "
                  "per model (default: temporary folders, removed at exit)");
  cmd->add_option("--http-threads", job->http_threads, "Threads of the HTTP server")
    ->check(CLI::Range(1, 64));
  cmd->add_option("--threads", job->actor_threads, "Actor threads (0: one per core)");
  cmd
    ->add_option("--probes", job->probes,
                 "IVF-PQ exports: inverted lists each shard scans per query")
    ->check(CLI::Range(1, 100000));
  cmd->add_option("--rerank", job->rerank, "IVF-PQ exports: candidates each shard re-ranks exactly")
    ->check(CLI::Range(1, 100000));
  cmd->add_option("--ef", job->ef, "Graph exports: the search beam of each shard")
    ->check(CLI::Range(1, 100000));
  cmd
    ->add_option("--shard-batches", job->shard_batches,
                 "Batches each shard server may have unanswered; queries arriving meanwhile "
                 "leave together (0: one message per query)")
    ->check(CLI::Range(0, 1024));
  cmd->add_option("--batch-limit", job->batch_limit, "Most queries in one shard batch")
    ->check(CLI::Range(1, 4096));
  cmd
    ->add_option("--shard-retry-ms", job->shard_attempt_ms,
                 "A shard batch unanswered within twice the shard's p99 round trip, and at "
                 "least this long, is sent again (then after 2x, 3x... until the deadline); "
                 "0: sent once")
    ->check(CLI::Range(0, 600000));
  add_plugin_option(cmd, *plugins);
  cmd->callback([job, listen, cluster, plugins, &exit_code] {
    if ((exit_code = load_plugins(*plugins, "serve")) != 0)
      return;
    auto address = runtime::parse_host_port(*listen);
    if (!address) {
      exit_code = fail("--listen", address.error());
      return;
    }
    job->listen = *address;
    if (!cluster->empty()) {
      auto seed = runtime::resolve_seed(*cluster);
      if (!seed) {
        exit_code = fail("--cluster", seed.error());
        return;
      }
      job->cluster = *seed;
    }
    if (auto err = serving::run_serve(*job))
      exit_code = fail(render(err));
  });
}

} // namespace darcy::apps
