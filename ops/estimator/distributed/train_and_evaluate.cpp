#include "ops/estimator/distributed/train_and_evaluate.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include "actors/estimator/parameter_server.hpp"
#include "messages/error.hpp"

namespace darcy::ops::estimator {

namespace {

std::vector<parameter_server_actor> spawn_servers(caf::actor_system& sys, const run_config& cfg,
                                                  size_t count) {
  std::vector<parameter_server_actor> out;
  for (size_t i = 0; i < count; ++i)
    out.push_back(sys.spawn(actors::parameter_server,
                            ps_config{static_cast<uint32_t>(i), cfg.optimizer, cfg.schedule}));
  return out;
}

} // namespace

caf::expected<experiment_result> train_and_evaluate(caf::actor_system& sys,
                                                    const model_factory& make_model, run_config cfg,
                                                    params p, train_spec train,
                                                    std::optional<eval_spec> eval,
                                                    cluster_shape shape) {
  if (train.max_steps == 0 || !train.input)
    return make_error(errc::invalid_config, "train_and_evaluate: max_steps must be > 0");
  if (shape.workers == 0 || shape.ps == 0)
    return make_error(errc::invalid_config,
                      "train_and_evaluate: it takes at least one worker and one parameter server");
  if (cfg.model_dir.empty())
    return make_error(errc::invalid_config, "train_and_evaluate: run_config.model_dir is empty");
  // Every role's model function, made before anything starts.
  std::vector<model_fn> models;
  for (size_t role = 0; role < shape.workers + (eval ? 1 : 0); ++role) {
    auto fn = make_model();
    if (!fn)
      return std::move(fn.error());
    models.push_back(std::move(*fn));
  }
  auto start = std::chrono::steady_clock::now();
  auto servers = spawn_servers(sys, cfg, shape.ps);
  auto stop_servers = [&] {
    for (auto& s : servers)
      caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  };
  auto timeout = std::chrono::milliseconds(60000);
  std::vector<std::unique_ptr<parameter_servers>> clients;
  for (size_t w = 0; w < shape.workers; ++w)
    clients.push_back(std::make_unique<parameter_servers>(sys, servers, timeout));
  // The chief loads the servers before any worker starts.
  auto chief_cfg = cfg;
  chief_cfg.servers = clients[0].get();
  estimator chief{models[0], chief_cfg, p};
  if (auto err = chief.build(train.input(0))) {
    stop_servers();
    return err;
  }
  std::vector<caf::expected<train_result>> results(shape.workers, caf::error{});
  std::atomic<bool> training{true};
  std::vector<std::thread> threads;
  threads.emplace_back(
    [&] { results[0] = chief.train(train.input(0), train.max_steps, train.chief_hooks); });
  for (size_t w = 1; w < shape.workers; ++w)
    threads.emplace_back([&, w] {
      auto worker_cfg = cfg;
      worker_cfg.model_dir.clear();
      worker_cfg.servers = clients[w].get();
      worker_cfg.chief = false;
      estimator worker{models[w], worker_cfg, p};
      results[w] = worker.train(train.input(w), train.max_steps);
    });
  std::optional<evaluator> follower;
  if (eval) {
    auto eval_cfg = cfg;
    eval_cfg.servers = nullptr;
    follower.emplace(models.back(), eval_cfg, p, *eval);
  }
  experiment_result out;
  caf::error failure;
  auto evaluate = [&] {
    auto next = follower->evaluate_newest();
    if (!next) {
      if (!failure)
        failure = std::move(next.error());
    } else if (*next) {
      out.evaluations.push_back(std::move(**next));
    }
  };
  std::thread eval_thread;
  if (follower)
    eval_thread = std::thread([&] {
      while (training.load() && !failure) {
        evaluate();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  for (auto& t : threads)
    t.join();
  training = false;
  if (eval_thread.joinable())
    eval_thread.join();
  for (auto& r : results) {
    if (!r) {
      if (!failure)
        failure = std::move(r.error());
    } else {
      out.worker_steps.push_back(r->steps);
    }
  }
  // The final checkpoint holds every worker's last step.
  if (!failure)
    failure = chief.save_checkpoint();
  out.global_step = chief.global_step();
  if (!failure && follower)
    evaluate();
  stop_servers();
  if (failure)
    return failure;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

} // namespace darcy::ops::estimator
