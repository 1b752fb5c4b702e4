#include "ops/estimator/distributed/run_role.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include <caf/scoped_actor.hpp>

#include "actors/actor_types.hpp"
#include "actors/estimator/parameter_server.hpp"
#include "messages/error.hpp"
#include "ops/embedding_totals.hpp"
#include "ops/estimator/hooks.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/cluster/supervisor.hpp"
#include "runtime/node.hpp"

namespace darcy::ops::estimator {

using namespace std::chrono_literals;

namespace {

constexpr auto request_timeout = std::chrono::milliseconds(30000);
/// How long the other roles wait for the chief to come up.
constexpr auto chief_patience = 120s;

std::string task_name(task_type t, size_t i) {
  return to_string(t) + "-" + std::to_string(i);
}

/// A task's node as the chief saw it joined: its agent and the registry's incarnation of it.
struct joined_node {
  caf::actor_addr agent;
  uint64_t incarnation = 0;
};

/// The ps and worker tasks that joined: their agents, and their nodes as they joined.
struct joined_tasks {
  std::map<std::string, runtime::spawn_target> targets;
  std::map<std::string, joined_node> nodes;
};

/// Waits until every ps and worker task has joined. A member that is one of `gone` (an
/// incarnation whose actors died: its process killed, or declared down and re-admitted under a
/// new incarnation, the same process at the same address) does not count.
caf::expected<joined_tasks> await_tasks(caf::actor_system& sys,
                                        const runtime::node_services& services,
                                        const role_config& role,
                                        std::chrono::milliseconds patience = 120s,
                                        const std::vector<joined_node>& gone = {}) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  auto is_gone = [&](const member_info& m) {
    return std::any_of(gone.begin(), gone.end(), [&](const joined_node& g) {
      return g.agent == m.agent.address() && g.incarnation == m.incarnation;
    });
  };
  for (;;) {
    auto status =
      runtime::ask<cluster_status>(sys, services.registry, request_timeout, status_atom::value);
    if (!status)
      return std::move(status.error());
    joined_tasks up;
    for (auto& m : status->members)
      if (m.state == member_state::up && !is_gone(m)) {
        up.targets[m.name] = {m.name, caf::actor_cast<node_agent_actor>(m.agent)};
        up.nodes[m.name] = {m.agent.address(), m.incarnation};
      }
    bool all = true;
    for (auto t : {task_type::ps, task_type::worker})
      for (size_t i = 0; i < role.count(t); ++i)
        all = all && up.targets.count(task_name(t, i));
    if (all)
      return up;
    if (std::chrono::steady_clock::now() > deadline)
      return make_error(errc::timeout, "chief: not every ps and worker task joined within " +
                                         std::to_string(patience.count() / 1000) + " s");
    std::this_thread::sleep_for(100ms);
  }
}

/// Stops `a` and waits (at most request_timeout) until it is gone.
void stop_and_wait(caf::actor_system& sys, const caf::actor& a) {
  caf::scoped_actor self{sys};
  self->monitor(a);
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->receive([](const caf::down_msg&) {}, caf::after(request_timeout) >> [] {});
}

/// What one round of the chief (its servers, its estimator and its workers) ended with.
struct round_outcome {
  caf::error failure;
  /// The index of the parameter server whose node died, if one did.
  int lost_ps = -1;
  /// How the round saw it go: the error it ended with, or that its server ended.
  std::string lost_why;
  /// The last global step seen, and that of the last checkpoint.
  uint64_t step = 0;
  uint64_t saved = 0;
  uint32_t worker_restarts = 0;
  /// The last poll before the global step first moved (and the step then), and when it first
  /// reached max_steps: the training rate leaves out the workers' start (loading their data)
  /// and the last checkpoint, and is defined even when every step fell between two polls.
  std::optional<std::pair<std::chrono::steady_clock::time_point, uint64_t>> moved, reached;
};

/// One round: spawns a parameter server on every ps node, loads them from the newest
/// checkpoint (or with fresh variables), starts the workers under a supervisor, and writes
/// checkpoints until the global step reaches max_steps and every worker has finished, or
/// until a parameter server's node dies (lost_ps; the round then stops its workers and servers).
round_outcome run_round(const role_options& o, caf::actor_system& sys,
                        const std::map<std::string, runtime::spawn_target>& tasks,
                        estimator_job& job, session* embeddings, uint64_t& resumed,
                        std::chrono::steady_clock::time_point start, std::ofstream& summary) {
  round_outcome r;
  auto opt = job.config.optimizer;
  std::vector<parameter_server_actor> servers;
  auto stop_servers = [&] {
    for (auto& s : servers)
      caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  };
  // A server that ends (its node died) ends the round at once with its index, instead of
  // waiting out the request timeout.
  auto lost_server = std::make_shared<std::atomic<int>>(-1);
  // An error of the round: a lost server when one died meanwhile (the node may die again
  // while the round starts), else a failure.
  auto settle = [&](caf::error err) {
    // A ps node's death reaches the chief twice: as its servers' down messages and as errors of
    // requests to it (its embedding shards), in either order. An error of the second kind waits
    // a little for the first, so that the round ends as a lost ps, not as a failure.
    bool peer_lost = err == caf::sec::request_receiver_down || err == caf::sec::request_timeout ||
                     is(err, errc::node_unreachable) || is(err, errc::timeout);
    for (int waited = 0; peer_lost && lost_server->load() < 0 && waited < 40; ++waited)
      std::this_thread::sleep_for(50ms);
    if (auto lost = lost_server->load(); lost >= 0) {
      r.lost_ps = lost;
      r.lost_why = render(err);
    } else
      r.failure = std::move(err);
  };
  // Settled before the servers stop: their own stop must not read as a lost node.
  auto fail = [&](caf::error err) {
    settle(std::move(err));
    stop_servers();
    return r;
  };
  for (size_t i = 0; i < o.role.count(task_type::ps); ++i) {
    auto ps = runtime::spawn_on(
      sys, tasks.at(task_name(task_type::ps, i)), request_timeout,
      actors::parameter_server_state::name,
      caf::make_message(ps_config{static_cast<uint32_t>(i), opt, job.config.schedule}));
    if (!ps) {
      // Its node died again, or is dying: the chief waits for the task to join again.
      lost_server->store(static_cast<int>(i));
      return fail(std::move(ps.error()));
    }
    servers.push_back(caf::actor_cast<parameter_server_actor>(*ps));
    servers.back()->attach_functor([lost_server, i] {
      int none = -1;
      lost_server->compare_exchange_strong(none, static_cast<int>(i));
    });
  }
  auto fn = job.model(embeddings);
  if (!fn)
    return fail(std::move(fn.error()));
  parameter_servers client{sys, servers, request_timeout, ps_attempt_timeout};
  auto cfg = job.config;
  cfg.model_dir = o.model_dir;
  cfg.servers = &client;
  cfg.embeddings = embeddings;
  // The step of the checkpoint restored from model_dir, when on_restore goes on from another.
  uint64_t checkpointed = 0;
  if (o.on_restore)
    cfg.after_restore = [&](estimator& e, uint64_t step) {
      checkpointed = step;
      return o.on_restore(e, step);
    };
  estimator chief{*fn, cfg};
  // Loads the servers from the newest checkpoint, or with fresh variables.
  if (auto err = chief.build(job.train_input(0)))
    return fail(std::move(err));
  resumed = chief.global_step();
  if (o.on_restore && resumed != checkpointed) {
    // Resumed from newer state than the last checkpoint: a checkpoint of it, so that model_dir
    // (the evaluator's, a later resume's) is where the job goes on from.
    if (auto err = chief.save_checkpoint())
      return fail(std::move(err));
  } else if (embeddings && resumed > 0) {
    std::cerr << "chief: restored " << chief.restored_embedding_rows()
              << " embedding rows from the checkpoint at global step " << resumed << std::endl;
  }
  // Every worker prefers its own node, then the other workers' nodes.
  auto workers = o.role.count(task_type::worker);
  supervisor_spec spec{.name = "estimator.workers", .intensity = 20, .period_ms = 60000};
  std::vector<std::string> worker_nodes;
  for (size_t i = 0; i < workers; ++i)
    worker_nodes.push_back(task_name(task_type::worker, i));
  for (size_t i = 0; i < workers; ++i) {
    child_spec child{
      .id = "worker." + std::to_string(i),
      .factory = actors::training_worker_name,
      .args = caf::make_message(
        worker_config{o.job, o.job_options.dump(), static_cast<uint32_t>(i), servers, o.max_steps}),
      .restart = restart_type::transient,
      .service = "estimator.worker." + std::to_string(i)};
    child.nodes = runtime::preferred_nodes(worker_nodes, i);
    spec.children.push_back(std::move(child));
  }
  auto supervisor = sys.spawn(runtime::supervisor, spec);
  // Why the supervisor gave up (the last worker's error), which an ask to it no longer says.
  auto gave_up = std::make_shared<std::pair<std::mutex, caf::error>>();
  supervisor->attach_functor([gave_up](const caf::error& reason) {
    std::lock_guard<std::mutex> guard{gave_up->first};
    gave_up->second = reason;
  });
  auto children = [&]() -> caf::expected<std::vector<child_info>> {
    auto kids =
      runtime::ask<std::vector<child_info>>(sys, supervisor, request_timeout, children_atom::value);
    std::lock_guard<std::mutex> guard{gave_up->first};
    if (!kids && gave_up->second)
      return gave_up->second;
    return kids;
  };
  uint64_t step = resumed;
  r.step = r.saved = resumed;
  // The servers' loss totals at the last summary line; they count from this round's load.
  loss_totals summarised;
  auto progressed = std::chrono::steady_clock::now();
  auto polled = progressed;
  for (;;) {
    if (auto lost = lost_server->load(); lost >= 0) {
      r.lost_ps = lost;
      r.lost_why = "its parameter server ended";
      break;
    }
    auto now = client.global_step();
    if (!now) {
      settle(std::move(now.error()));
      break;
    }
    if (*now != step) {
      progressed = std::chrono::steady_clock::now();
      if (!r.moved)
        r.moved = std::pair{polled, step};
      if (*now >= o.max_steps && !r.reached)
        r.reached = std::pair{progressed, *now};
    }
    polled = std::chrono::steady_clock::now();
    step = r.step = *now;
    if (std::chrono::steady_clock::now() - progressed > 300s) {
      r.failure = make_error(errc::timeout, "chief: the global step has not moved for 300 s");
      break;
    }
    auto kids = children();
    if (!kids) { // the supervisor gave up: the workers failed too often
      r.failure = std::move(kids.error());
      break;
    }
    // Done when the global step is reached and every worker has exited (before that, a
    // worker not running is one its supervisor is about to start again).
    bool running = false;
    for (auto& c : *kids)
      running = running || c.actor;
    bool done = step >= o.max_steps && !running;
    // Past max_steps only the final checkpoint is written: an evaluator follows checkpoints
    // until one reaches max_steps, and that one must be the last (workers still running may
    // add a step or two after the step crosses it).
    bool periodic =
      step < o.max_steps && step / o.save_checkpoints_steps > r.saved / o.save_checkpoints_steps;
    if (periodic || done) {
      if (auto err = chief.save_checkpoint()) {
        settle(std::move(err));
        break;
      }
      r.saved = chief.global_step();
      r.step = std::max(r.step, r.saved);
      auto seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (summary) {
        auto totals = client.losses();
        if (!totals) {
          settle(std::move(totals.error()));
          break;
        }
        // The mean training loss of the workers' steps since the last line (null: none).
        nlohmann::json loss;
        if (totals->count > summarised.count)
          loss = (totals->sum - summarised.sum) / double(totals->count - summarised.count);
        summarised = *totals;
        summary << nlohmann::json{{"step", r.saved},
                                  {"global_step", r.saved},
                                  {"loss", loss},
                                  {"seconds", seconds},
                                  {"steps_per_second", double(r.saved - resumed) / seconds}}
                     .dump()
                << std::endl;
      }
    }
    if (o.on_step)
      if (auto err = o.on_step(chief, embeddings, done ? r.saved : step, done)) {
        settle(std::move(err));
        break;
      }
    if (done)
      break;
    std::this_thread::sleep_for(100ms);
  }
  if (auto kids = children())
    for (auto& c : *kids)
      r.worker_restarts += c.restarts;
  // The next round's supervisor registers the same services: this one is gone first.
  stop_and_wait(sys, caf::actor_cast<caf::actor>(supervisor));
  stop_servers();
  return r;
}

caf::error run_chief(const role_options& o, caf::actor_system& sys,
                     const runtime::node_services& services, std::ostream& out) {
  if (o.model_dir.empty())
    return make_error(errc::invalid_config, "chief: --model-dir is required");
  auto job = make_job(*o.jobs, o.job, o.job_options);
  if (!job)
    return std::move(job.error());
  auto tasks = await_tasks(sys, services, o.role);
  if (!tasks)
    return std::move(tasks.error());
  // The embedding service's shards live on the ps nodes, as the dense variables do. After a
  // ps node died the service is started afresh (its master and every shard), and the round's
  // chief restores it from the last checkpoint with the dense variables.
  std::unique_ptr<session> embeddings;
  auto start_embeddings = [&]() -> caf::error {
    embeddings.reset();
    if (!job->uses_embeddings)
      return {};
    session_options so{.timeout = request_timeout, .shard_retry = ps_attempt_timeout};
    for (size_t i = 0; i < o.role.count(task_type::ps); ++i)
      so.shard_nodes.push_back(task_name(task_type::ps, i));
    auto s = session::attach(sys, so);
    if (!s)
      return std::move(s.error());
    if (auto err = (*s)->publish_embeddings(job_embedding_service, o.role.node_name()))
      return err;
    embeddings = std::move(*s);
    return {};
  };
  if (auto err = start_embeddings())
    return err;
  auto start = std::chrono::steady_clock::now();
  std::ofstream summary;
  if (!o.summary.empty())
    summary = open_summary(o.summary);
  uint64_t first_resumed = 0, replayed = 0;
  uint32_t worker_restarts = 0, ps_recoveries = 0;
  round_outcome r;
  for (bool first = true;; first = false) {
    uint64_t resumed = 0;
    r = run_round(o, sys, tasks->targets, *job, embeddings.get(), resumed, start, summary);
    if (first)
      first_resumed = resumed;
    worker_restarts += r.worker_restarts;
    if (r.failure)
      return r.failure;
    if (r.lost_ps < 0)
      break;
    auto lost = task_name(task_type::ps, static_cast<size_t>(r.lost_ps));
    // Like a TF session recreated after a ps failure: once the ps task has joined again, every
    // server is loaded from the last checkpoint and the workers continue from its step. The
    // embedding service lost shards with the node: it stops now, and starts again below.
    embeddings.reset();
    replayed += r.step > r.saved ? r.step - r.saved : 0;
    auto patience_s = std::to_string(o.ps_rejoin_timeout.count() / 1000);
    std::cerr << "chief: the parameter server on " << lost << " is gone (" << r.lost_why
              << "); waiting up to " << patience_s << " s for " << lost
              << " to join again, then resuming from the checkpoint at global step " << r.saved
              << (o.on_restore ? " or from the newer state the job keeps" : "") << std::endl;
    auto old = tasks->nodes.at(lost);
    tasks = await_tasks(sys, services, o.role, o.ps_rejoin_timeout, {old});
    if (!tasks)
      return make_error(errc::unavailable,
                        "chief: the parameter server on " + lost +
                          " is gone, and it did not "
                          "join again within " +
                          patience_s +
                          " s: start every role again, and "
                          "the chief resumes from its last checkpoint (global step " +
                          std::to_string(r.saved) + ")");
    if (auto err = start_embeddings())
      return err;
    ++ps_recoveries;
  }
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double rate = 0;
  if (r.moved && r.reached && r.reached->first > r.moved->first)
    rate = double(r.reached->second - r.moved->second) /
           std::chrono::duration<double>(r.reached->first - r.moved->first).count();
  nlohmann::json line{{"role", "chief"},
                      {"global_step", r.saved},
                      {"resumed_from", first_resumed},
                      {"workers", o.role.count(task_type::worker)},
                      {"worker_restarts", worker_restarts},
                      {"ps_recoveries", ps_recoveries},
                      {"replayed_steps", replayed},
                      {"seconds", seconds},
                      {"steps_per_second", rate}};
  // How the ps nodes' tiers served the job (counted since their last start); left out when
  // the shards cannot answer.
  if (embeddings)
    if (auto t = total_stats(*embeddings, embeddings->embedding_names()))
      line["embeddings"] = {{"rows", t->rows},
                            {"tier_hits", t->tier_hits},
                            {"tier_misses", t->tier_misses},
                            {"disk_reads", t->disk_reads},
                            {"prefetched_rows", t->prefetched_rows}};
  out << line.dump() << std::endl;
  return {};
}

/// Serves until the chief, which holds the registry, is gone (two status requests in a row
/// unanswered), then ends the process at once: a training worker of the dead job may still be
/// blocked on its parameter servers, and the job is over for this host either way.
caf::error host_until_chief_leaves(caf::actor_system& sys, const runtime::node_services& services) {
  for (int missed = 0; missed < 2;) {
    std::this_thread::sleep_for(500ms);
    auto status = runtime::ask<cluster_status>(sys, services.registry, 2s, status_atom::value);
    missed = status ? 0 : missed + 1;
  }
  std::cout.flush();
  std::_Exit(0);
}

caf::error run_evaluator(const role_options& o, std::ostream& out) {
  if (o.model_dir.empty())
    return make_error(errc::invalid_config, "evaluator: --model-dir is required");
  auto job = make_job(*o.jobs, o.job, o.job_options);
  if (!job)
    return std::move(job.error());
  // The evaluator restores each checkpoint's embeddings into a service of its own, in memory:
  // tables on disk would open the databases of the ps on the same host.
  std::unique_ptr<session> embeddings;
  if (job->uses_embeddings) {
    auto s = session::open({.name = "evaluator", .threads = 1, .tables_in_memory = true});
    if (!s)
      return std::move(s.error());
    embeddings = std::move(*s);
  }
  auto fn = job->model(embeddings.get());
  if (!fn)
    return std::move(fn.error());
  auto cfg = job->config;
  cfg.model_dir = o.model_dir;
  cfg.embeddings = embeddings.get();
  auto spec = job->eval;
  spec.export_dir = o.export_dir;
  evaluator ev{*fn, cfg, {}, spec};
  auto rounds = ev.follow(o.max_steps, 500ms, [&](const evaluation& e) {
    nlohmann::json line{{"role", "evaluator"}};
    for (auto& [name, value] : e.metrics)
      line[name] = value;
    line.update(
      {{"global_step", e.global_step}, {"improved", e.improved}, {"exported", e.exported}});
    out << line.dump() << std::endl;
  });
  return rounds ? caf::error{} : std::move(rounds.error());
}

} // namespace

caf::error run_role(const role_options& o, std::ostream& out) {
  // Hosts (ps, worker) run what the chief sends them, but a bad option in their own command
  // line is a mistake all the same: refused here, before the node starts or waits.
  if (!o.jobs)
    return make_error(errc::invalid_config, "estimator role: no job catalog");
  if (auto err = check_job_options(*o.jobs, o.job, o.job_options))
    return err;
  auto node = o.node;
  node.name = o.role.node_name();
  node.listen = o.role.address();
  if (o.role.type != task_type::chief)
    node.join = o.role.chief();
  auto jobs = training_jobs_of(o.jobs);
  auto hook = [jobs](runtime::system_config& cfg) {
    actors::register_actor_types(cfg);
    actors::add_training_worker_type(cfg, jobs);
  };
  bool joined = false;
  auto role_main = [&](caf::actor_system& sys, const runtime::node_services& services) {
    joined = true;
    switch (o.role.type) {
      case task_type::chief:
        return run_chief(o, sys, services, out);
      case task_type::evaluator:
        return run_evaluator(o, out);
      default:
        return host_until_chief_leaves(sys, services);
    }
  };
  // Roles may start in any order: the others wait for the chief to listen. A task started
  // again after its node died waits, too, until the chief has seen its previous incarnation
  // down (until then its name is taken).
  auto deadline = std::chrono::steady_clock::now() + chief_patience;
  for (;;) {
    auto err = runtime::run_node_with(node, hook, role_main);
    auto retry = is(err, errc::node_unreachable) || is(err, errc::duplicate_node);
    if (joined || !retry || o.role.type == task_type::chief ||
        std::chrono::steady_clock::now() > deadline)
      return err;
    std::this_thread::sleep_for(500ms);
  }
}

} // namespace darcy::ops::estimator
