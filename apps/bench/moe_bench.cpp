#include "apps/bench/moe_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/actor_types.hpp"
#include "actors/moe/expert_actor.hpp"
#include "actors/moe/moe_router.hpp"
#include "apps/bench/moe_settings.hpp"
#include "apps/bench/node_pair.hpp"
#include "apps/bench/peer_scripts.hpp"
#include "apps/bench/python_peer.hpp"
#include "compute/moe/moe_layer.hpp"
#include "compute/nn/dense.hpp"
#include "compute/nn/init.hpp"
#include "compute/nn/relu.hpp"
#include "compute/nn/sequential.hpp"
#include "compute/stats.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/client.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/system_config.hpp"

namespace darcy::apps {

namespace {

using clock = std::chrono::steady_clock;
using compute::nn::matrix;

/// The setting's layer as a router in this process over expert actors, `replicas` replicas of
/// o.tokens tokens each combined per step: median steps per second and the experts' mean batch.
/// The experts run in this process, or all on the node at `expert_node` when given.
struct router_result {
  double steps_per_s = 0;
  double expert_batch = 0;
};

caf::expected<router_result> run_router(const moe_setting& s, const moe_bench_options& o,
                                        uint32_t replicas,
                                        const std::optional<runtime::host_port>& expert_node) {
  runtime::system_config cfg{"bench", o.threads};
  actors::register_actor_types(cfg);
  caf::actor_system sys{cfg};
  auto args = [&](size_t e) {
    return caf::make_message(expert_config{s.cfg, static_cast<uint32_t>(e), 1e-3});
  };
  std::vector<expert_actor> experts;
  if (expert_node) {
    auto agent = runtime::connect_agent(sys, *expert_node);
    if (!agent)
      return std::move(agent.error());
    auto remote = runtime::spawn_group<expert_actor>(
      sys, {{runtime::to_string(*expert_node), *agent}}, std::chrono::seconds(30),
      actors::expert_state::name, args, s.cfg.gating.experts);
    if (!remote)
      return std::move(remote.error());
    experts = std::move(*remote);
  } else {
    for (uint32_t e = 0; e < s.cfg.gating.experts; ++e)
      experts.push_back(sys.spawn(actors::moe_expert, expert_config{s.cfg, e, 1e-3}));
  }
  auto router = sys.spawn(actors::moe_router, moe_router_config{s.cfg, replicas, 1e-3}, experts);
  caf::scoped_actor self{sys};
  std::mt19937_64 rng{11};
  auto block = [&](uint64_t step) {
    auto [values, span] = shared_floats::allocate(size_t{o.tokens} * o.dim);
    Eigen::Map<matrix>{span.data(), o.tokens, o.dim} =
      compute::nn::normal<float>(o.tokens, o.dim, 1.0f, rng);
    return row_block{step, o.tokens, std::move(values)};
  };
  // Each replica's request goes out before any answer is awaited: the router answers none
  // until every replica has sent.
  auto phase = [&](auto atom, uint64_t step) {
    using handle =
      decltype(self->request(router, std::chrono::minutes(5), atom, uint32_t{0}, row_block{}));
    std::vector<handle> handles;
    for (uint32_t r = 0; r < replicas; ++r)
      handles.push_back(self->request(router, std::chrono::minutes(5), atom, r, block(step)));
    caf::error failure;
    for (auto& h : handles)
      h.receive([](row_block&) {}, [&](caf::error& e) { failure = e; });
    return failure;
  };
  std::vector<double> times;
  router_result result;
  for (uint32_t step = 0; step <= o.steps; ++step) {
    auto start = clock::now();
    if (auto err = phase(forward_atom::value, step))
      return err;
    if (auto err = phase(backward_atom::value, step))
      return err;
    if (step > 0)
      times.push_back(std::chrono::duration<double>(clock::now() - start).count());
  }
  self->request(router, std::chrono::minutes(1), status_atom::value)
    .receive(
      [&](moe_router_status& st) {
        double total = 0;
        for (auto b : st.expert_batch)
          total += b;
        result.expert_batch = total / std::max<size_t>(st.expert_batch.size(), 1);
      },
      [](caf::error&) {});
  result.steps_per_s = 1.0 / compute::median(std::move(times));
  for (auto& e : experts)
    caf::anon_send_exit(e, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
  return result;
}

struct result {
  double moe = 0, dense = 0, torch_moe = 0, torch_dense = 0;
  double expert_batch = 0, expert_batch_min = 0, expert_batch_max = 0;
  std::string torch_blas;
};

caf::expected<result> run_setting(const moe_setting& s, const moe_bench_options& o,
                                  const std::string& dir) {
  result r;
  std::mt19937_64 rng{7};
  auto layer = make_bench_layer(s, rng);
  if (!layer)
    return make_error(layer.error());
  (*layer)->set_threads(o.threads);
  matrix x = compute::nn::normal<float>(o.tokens, o.dim, 1.0f, rng);
  matrix dy = compute::nn::normal<float>(o.tokens, o.dim, 1.0f, rng);
  r.moe = o.tokens / median_step_seconds(**layer, x, dy, o.steps);
  auto& plan = (*layer)->plan();
  std::vector<uint32_t> batches;
  for (uint32_t e = 0; e < plan.experts(); ++e)
    batches.push_back(plan.expert_batch(e));
  r.expert_batch = static_cast<double>(plan.slots()) / plan.experts();
  r.expert_batch_min = *std::min_element(batches.begin(), batches.end());
  r.expert_batch_max = *std::max_element(batches.begin(), batches.end());

  compute::nn::sequential<float> dense;
  dense.add(std::make_unique<compute::nn::dense<float>>(o.dim, s.dense_hidden, rng));
  dense.add(std::make_unique<compute::nn::relu<float>>());
  dense.add(std::make_unique<compute::nn::dense<float>>(s.dense_hidden, o.dim, rng));
  dense.set_threads(o.threads);
  r.dense = o.tokens / median_step_seconds(dense, x, dy, o.steps);

  if (o.peer) {
    std::ostringstream args;
    args << s.name << " " << o.tokens << " " << o.dim << " " << o.experts << " " << s.cfg.gating.k
         << " " << s.cfg.hidden << " " << s.dense_hidden << " " << o.steps << " " << o.threads;
    auto lines = run_python(o.python, peers::moe_torch_py, args.str(), dir);
    if (!lines)
      return lines.error();
    auto peer = peer_result(*lines, "moe_tokens_per_s");
    if (!peer)
      return peer.error();
    r.torch_moe = peer->value("moe_tokens_per_s", 0.0);
    r.torch_dense = peer->value("dense_tokens_per_s", 0.0);
    r.torch_blas = peer->value("blas", std::string{"unknown"});
    if (r.torch_moe <= 0)
      return make_error(errc::io_error, "the PyTorch peer printed no result");
  }
  return r;
}

} // namespace

caf::error run_moe_bench(const moe_bench_options& o) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string bad;
  auto names = parse_moe_settings(o.settings, bad);
  if (names.empty()) {
    return make_error(errc::invalid_argument, bad);
  }
  if (o.tokens == 0 || o.dim == 0 || o.experts == 0 || o.steps == 0 || o.threads == 0) {
    return make_error(errc::invalid_argument,
                      "tokens, dim, experts, steps and threads must be >= 1");
  }
  if (o.peer)
    if (auto err = require_torch_peer(o.python))
      return err;
  auto dir =
    (std::filesystem::temp_directory_path() / ("darcy-bench-moe-" + std::to_string(::getpid())))
      .string();
  std::filesystem::create_directories(dir);
  std::printf(
    "%u tokens, d = %u, %u experts, %u threads, median of %u steps (forward + "
    "backward)\n",
    o.tokens, o.dim, o.experts, o.threads, o.steps);
  std::ostringstream json;
  double worst_torch = 1e300, worst_dense = 1e300;
  std::optional<node_pair> nodes; // started for the first run with experts on another node
  for (auto& name : names) {
    auto s = make_moe_setting(name, o.dim, o.experts);
    auto r = run_setting(s, o, dir);
    if (!r) {
      std::filesystem::remove_all(dir);
      return r.error();
    }
    auto vs_dense = r->moe / r->dense;
    std::printf(
      "%s: darcy moe %.0f tokens/s, darcy dense (hidden %u) %.0f, expert batch %.1f "
      "(%.0f..%.0f)\n",
      name.c_str(), r->moe, s.dense_hidden, r->dense, r->expert_batch, r->expert_batch_min,
      r->expert_batch_max);
    json << "\"" << name << "_tokens_per_s\":" << r->moe << ",\"" << name
         << "_dense_tokens_per_s\":" << r->dense << ",\"" << name
         << "_moe_vs_dense_flops\":" << vs_dense << ",\"" << name
         << "_expert_batch\":" << r->expert_batch << ",";
    worst_dense = std::min(worst_dense, vs_dense);
    if (o.routers) {
      struct run {
        uint32_t replicas;
        bool remote;
      };
      for (auto [replicas, remote] : {run{1, false}, run{2, false}, run{1, true}, run{2, true}}) {
        std::optional<runtime::host_port> where;
        if (remote) {
          if (!nodes) {
            auto started = start_node_pair("moe");
            if (!started) {
              return with_step("starting a node", started.error());
            }
            nodes.emplace(std::move(*started));
          }
          where = nodes->b.address;
        }
        auto routed = run_router(s, o, replicas, where);
        if (!routed) {
          return with_step("router", routed.error());
        }
        auto place = remote ? std::string{"on a second node process"} : "in process";
        std::printf(
          "%s: experts as actors %s, %u replica(s) of %u tokens combined: %.2f "
          "steps/s (%.0f tokens/s), expert batch %.1f\n",
          name.c_str(), place.c_str(), replicas, o.tokens, routed->steps_per_s,
          routed->steps_per_s * replicas * o.tokens, routed->expert_batch);
        auto key = name + (remote ? "_actors_remote_r" : "_actors_r") + std::to_string(replicas);
        json << "\"" << key << "_steps_per_s\":" << routed->steps_per_s << ",\"" << key
             << "_expert_batch\":" << routed->expert_batch << ",";
      }
    }
    if (o.peer) {
      auto vs_torch = r->moe / r->torch_moe;
      std::printf("%s: torch moe %.0f tokens/s, torch dense %.0f (%s)\n", name.c_str(),
                  r->torch_moe, r->torch_dense, r->torch_blas.c_str());
      json << "\"" << name << "_torch_tokens_per_s\":" << r->torch_moe << ",\"" << name
           << "_torch_dense_tokens_per_s\":" << r->torch_dense << ",\"" << name
           << "_moe_vs_torch\":" << vs_torch << ",";
      worst_torch = std::min(worst_torch, vs_torch);
    }
  }
  std::filesystem::remove_all(dir);
  json << "\"moe_vs_dense_flops\":" << worst_dense;
  if (o.peer)
    json << ",\"moe_vs_torch\":" << worst_torch;
  json << ",\"threads\":" << o.threads << ",\"cores\":" << std::thread::hardware_concurrency();
  std::printf("{\"bench\":\"moe\",\"metrics\":{%s}}\n", json.str().c_str());
  return {};
}

} // namespace darcy::apps
