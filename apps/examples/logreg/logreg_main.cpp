// darcy-logreg: the example app of docs/writing-an-app.md. Logistic regression on hashed string
// features, its weights in Darcy's embedding service, its training in an app actor that a
// supervisor restarts. One binary plays every role:
//   darcy-logreg generate --out data.tsv                       # a planted problem
//   darcy-logreg node --name a --listen 127.0.0.1:7000         # cluster nodes that know the app
//   darcy-logreg node --name b --listen 127.0.0.1:7001 --join 127.0.0.1:7000
//   darcy-logreg train --data data.tsv --cluster 127.0.0.1:7000 --kill-trainer-at-epoch 2
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/actor_types.hpp"
#include "apps/examples/logreg/logreg_data.hpp"
#include "apps/examples/logreg/logreg_messages.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "runtime/cluster/chaos.hpp"
#include "runtime/cluster/cluster_file.hpp"
#include "runtime/node.hpp"

namespace darcy::examples {

namespace {

void configure(runtime::system_config& cfg) {
  actors::register_actor_types(cfg);
  register_logreg_types(cfg);
}

struct train_flags {
  std::string data;
  std::string cluster;
  std::string trainer_node;
  uint32_t epochs = 5;
  uint32_t batch = 64;
  float learning_rate = 0.5f;
  size_t shards = 2;
  uint32_t kill_at_epoch = 0;
  int64_t timeout_ms = 60000;
};

de_config weights_config(const train_flags& f) {
  de_config cfg;
  cfg.name = "logreg";
  cfg.dim = 1;
  cfg.init.kind = init_kind::zeros;
  cfg.optimizer.kind = optimizer_kind::sgd;
  cfg.optimizer.learning_rate = f.learning_rate;
  return cfg;
}

caf::error train(const train_flags& f) {
  ops::session_options so;
  so.name = "logreg-driver";
  so.shards = f.shards;
  so.configure = configure;
  if (!f.cluster.empty()) {
    auto seed = runtime::resolve_seed(f.cluster);
    if (!seed)
      return seed.error();
    so.seed = *seed;
  }
  auto opened = ops::session::open(so);
  if (!opened)
    return opened.error();
  auto& s = **opened;
  if (auto err = s.ensure_embedding(weights_config(f)))
    return err;
  auto master = s.embeddings();
  if (!master)
    return master.error();

  caf::scoped_actor self{s.system()};
  logreg_config config;
  config.data = f.data;
  config.epochs = f.epochs;
  config.batch = f.batch;
  config.master = *master;
  config.listener = caf::actor_cast<caf::actor>(self);
  // The trainer is the supervisor's child: restarted (transient) only when it fails.
  child_spec trainer{"trainer", logreg_trainer_name,     caf::make_message(config),
                     {},        restart_type::transient, logreg_trainer_service};
  if (!f.trainer_node.empty())
    trainer.nodes.push_back(f.trainer_node);
  auto supervisor = s.supervise({"logreg", restart_strategy::one_for_one, 3, 60000, {trainer}});
  self->send(supervisor, subscribe_atom::value, caf::actor_cast<caf::actor>(self));

  logreg_progress last;
  uint32_t restarts = 0;
  bool killed = false;
  caf::error failure;
  while (!last.done && !failure) {
    self->receive(
      [&](logreg_progress& p) {
        std::cout << "epoch " << p.epoch << " on node " << p.node << ": loss " << p.loss
                  << ", accuracy " << p.accuracy << std::endl;
        last = p;
        if (!killed && f.kill_at_epoch > 0 && p.epoch == f.kill_at_epoch && !p.done) {
          killed = true;
          std::cout << "killing the trainer" << std::endl;
          failure =
            runtime::kill_service(s.system(), s.registry(), logreg_trainer_service, s.timeout());
        }
      },
      [&](supervisor_event& e) {
        if (e.kind == supervisor_event_kind::child_restarted) {
          ++restarts;
          std::cout << "trainer restarted on node " << e.node << " by its supervisor" << std::endl;
        } else if (e.kind == supervisor_event_kind::gave_up) {
          failure = make_error(errc::restart_intensity_exceeded, "trainer: " + e.reason);
        }
      },
      caf::after(std::chrono::milliseconds(f.timeout_ms)) >>
        [&] {
          failure = make_error(
            errc::timeout, "no word from the trainer for " + std::to_string(f.timeout_ms) + " ms");
        });
  }
  caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
  if (failure)
    return failure;
  std::printf("{\"loss\":%.6f,\"accuracy\":%.6f,\"restarts\":%u}\n", last.loss, last.accuracy,
              restarts);
  return {};
}

} // namespace

} // namespace darcy::examples

int main(int argc, char** argv) {
  using namespace darcy;
  CLI::App app{"darcy-logreg: logistic regression on hashed features, as Darcy app actors"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();
  int exit_code = 0;
  auto report = [&exit_code](const caf::error& err) {
    if (err)
      std::cerr << "darcy-logreg: error: " << render(err) << std::endl;
    exit_code = err ? 1 : 0;
  };

  std::string out;
  uint32_t lines = 4000;
  uint64_t seed = 1;
  auto gen = app.add_subcommand("generate", "Write a planted problem: label<TAB>text lines");
  gen->add_option("--out", out, "File to write")->required();
  gen->add_option("--lines", lines, "Examples");
  gen->add_option("--seed", seed, "Random seed");
  gen->callback([&] { report(examples::generate_examples(out, lines, seed)); });

  std::string name = "a", listen = "127.0.0.1:0", join;
  auto node = app.add_subcommand("node", "A cluster node that can run the trainer");
  node->add_option("--name", name, "Node name, unique in the cluster");
  node->add_option("--listen", listen, "HOST:PORT (port 0: any free port)");
  node->add_option("--join", join, "HOST:PORT of the seed (none: this node is the seed)");
  node->callback([&] {
    runtime::node_options opts;
    opts.name = name;
    auto where = runtime::parse_host_port(listen);
    if (!where)
      return report(where.error());
    opts.listen = *where;
    if (!join.empty()) {
      auto seed_at = runtime::parse_host_port(join);
      if (!seed_at)
        return report(seed_at.error());
      opts.join = *seed_at;
    }
    report(runtime::run_node(opts, examples::configure));
  });

  examples::train_flags f;
  auto train = app.add_subcommand("train", "Train, in process or on a cluster");
  train->add_option("--data", f.data, "label<TAB>text lines")->required();
  train->add_option("--cluster", f.cluster,
                    "Seed HOST:PORT, or a cluster file or directory (default: in-process)");
  train->add_option("--trainer-node", f.trainer_node, "Node of the trainer (default: any)");
  train->add_option("--epochs", f.epochs, "Passes over the data");
  train->add_option("--batch", f.batch, "Examples per update");
  train->add_option("--learning-rate", f.learning_rate, "SGD rate of the shards' optimizer");
  train->add_option("--shards", f.shards, "Embedding shards in process, or per node");
  train->add_option("--kill-trainer-at-epoch", f.kill_at_epoch,
                    "Kill the trainer once, after this epoch, to watch its supervisor restart it");
  train->add_option("--timeout-ms", f.timeout_ms, "Give up after this long without progress");
  train->callback([&] { report(examples::train(f)); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
