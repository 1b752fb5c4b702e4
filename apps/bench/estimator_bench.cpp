#include "apps/bench/estimator_bench.hpp"
#include "apps/bench/estimator_scaling.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "apps/bench/peer_scripts.hpp"
#include "apps/bench/python_peer.hpp"
#include "apps/estimator/fashion_mnist.hpp"
#include "compute/stats.hpp"
#include "messages/error.hpp"
#include "ops/estimator/estimator.hpp"
#include "stores/data/brown_corpus.hpp"

namespace darcy::apps {

namespace {} // namespace

caf::error run_estimator_bench(const estimator_bench_options& o) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (o.repeats == 0 || o.threads == 0 || o.scaling_repeats == 0 || o.scaling_ps == 0) {
    return make_error(errc::invalid_argument,
                      "repeats, scaling repeats, ps tasks and threads must be >= 1");
  }
  const auto& counts = o.scaling_workers;
  if (counts.empty() || counts[0] != 1 || !std::is_sorted(counts.begin(), counts.end()) ||
      std::adjacent_find(counts.begin(), counts.end()) != counts.end()) {
    return make_error(errc::invalid_argument,
                      "--scaling-workers must be ascending worker counts from 1 (the base of every "
                      "ratio), such as 1,2,4");
  }
  if (o.peer)
    if (auto err = require_torch_peer(o.python))
      return err;
  if (o.scaling_steps > 0)
    if (auto catalog = stores::read_brown_catalog(o.corpus); !catalog) {
      return with_step("--corpus", catalog.error());
    }
  auto data = estimator_apps::load_fashion_mnist(o.data_dir);
  if (!data) {
    return data.error();
  }
  std::printf(
    "Fashion-MNIST DNN 784-256-128-10, Adam, batch 128, %zu threads; steps/s is the "
    "median of %u epochs\n",
    o.threads, o.repeats);
  // Darcy: whole epochs through the Estimator (input pipeline, model function, optimizer).
  std::vector<double> rates;
  for (uint32_t r = 0; r < o.repeats; ++r) {
    estimator_apps::fashion_mnist_options fo;
    fo.data_dir = o.data_dir;
    fo.epochs = 1;
    fo.threads = o.threads;
    fo.seed = r + 1;
    fo.quiet = true;
    auto run = estimator_apps::run_fashion_mnist(fo, *data);
    if (!run) {
      return run.error();
    }
    rates.push_back(run->steps_per_second);
  }
  double darcy_rate = compute::percentile(rates, 0.5);
  std::printf("darcy estimator: %.1f steps/s\n", darcy_rate);
  std::ostringstream json;
  json << "\"dnn_steps_per_s\":" << darcy_rate;
  if (o.peer) {
    auto dir = (std::filesystem::temp_directory_path() /
                ("darcy-bench-estimator-" + std::to_string(::getpid())))
                 .string();
    std::filesystem::create_directories(dir);
    auto lines = run_python(
      o.python, peers::estimator_torch_mlp_py,
      o.data_dir + " " + std::to_string(o.repeats) + " " + std::to_string(o.threads), dir);
    std::filesystem::remove_all(dir);
    if (!lines) {
      return with_step("the PyTorch peer", lines.error());
    }
    auto peer = peer_result(*lines, "steps_per_s");
    double torch_rate = peer ? peer->value("steps_per_s", 0.0) : 0.0;
    auto blas = peer ? peer->value("blas", std::string{"unknown"}) : std::string{};
    if (torch_rate <= 0) {
      return make_error(errc::invalid_argument, "the PyTorch peer printed no result");
    }
    std::printf("pytorch: %.1f steps/s (%s)\n", torch_rate, blas.c_str());
    json << ",\"torch_steps_per_s\":" << torch_rate
         << ",\"dnn_vs_torch\":" << darcy_rate / torch_rate;
  }
  if (o.epochs > 0) {
    estimator_apps::fashion_mnist_options fo;
    fo.data_dir = o.data_dir;
    fo.epochs = o.epochs;
    fo.threads = o.threads;
    fo.quiet = true;
    auto run = estimator_apps::run_fashion_mnist(fo, *data);
    if (!run) {
      return run.error();
    }
    std::printf("accuracy run: %u epochs, test accuracy %.4f, test loss %.4f, %.1f s\n", o.epochs,
                run->test_accuracy, run->test_loss, run->seconds);
    json << ",\"test_accuracy\":" << run->test_accuracy << ",\"epochs\":" << o.epochs;
  }
  if (o.scaling_steps > 0) {
    scaling_options so{
      .corpus = o.corpus, .steps = o.scaling_steps, .threads = o.threads, .ps = o.scaling_ps};
    // Runs alternate (1 worker, 2 workers, 1, 2, ...) so that a slow spell of a shared machine
    // falls on every count; each count's figure is its median.
    std::vector<std::vector<double>> by_workers(counts.size()), step_ms(counts.size());
    for (uint32_t r = 0; r < o.scaling_repeats; ++r) {
      for (size_t c = 0; c < counts.size(); ++c) {
        auto run = distributed_run(so, counts[c]);
        if (!run) {
          return with_step("scaling", run.error());
        }
        by_workers[c].push_back(run->steps_per_second);
        std::printf("brown-genre Wide & Deep, %zu ps, %zu worker(s), run %u: %.1f global steps/s",
                    o.scaling_ps, counts[c], r + 1, run->steps_per_second);
        // A worker's step, phase by phase: what waits on the ps and the embedding service.
        double total = 0;
        const char* sep = "; a worker's step (ms):";
        for (auto& [phase, ms] : run->worker_step_ms)
          total += ms;
        for (const char* phase : ops::estimator::step_phase_names)
          if (auto it = run->worker_step_ms.find(phase); it != run->worker_step_ms.end()) {
            std::printf("%s %s %.2f", sep, phase, it->second);
            sep = ",";
          }
        std::printf("\n");
        if (!run->worker_step_ms.empty())
          step_ms[c].push_back(total);
      }
    }
    std::printf("medians of %u runs, %zu ps:", o.scaling_repeats, o.scaling_ps);
    std::vector<double> rates;
    for (size_t c = 0; c < counts.size(); ++c) {
      rates.push_back(compute::percentile(by_workers[c], 0.5));
      std::printf("%s %zu worker(s) %.1f", c ? "," : "", counts[c], rates[c]);
    }
    std::printf(" global steps/s\n");
    // Counts are validated as ascending, from 1: rates[0] is the one-worker rate.
    for (size_t c = 0; c < counts.size(); ++c) {
      auto suffix = std::to_string(counts[c]) + (counts[c] == 1 ? "_worker" : "_workers");
      json << ",\"global_steps_per_s_" << suffix << "\":" << rates[c];
      if (!step_ms[c].empty())
        json << ",\"worker_step_ms_" << suffix << "\":" << compute::percentile(step_ms[c], 0.5);
    }
    for (size_t c = 1; c < counts.size(); ++c)
      json << ",\"scaling_" << counts[c] << "_workers\":" << rates[c] / rates[0];
    if (o.scaling_ps != 1)
      json << ",\"scaling_ps\":" << o.scaling_ps;
  }
  json << ",\"threads\":" << o.threads << ",\"cores\":" << std::thread::hardware_concurrency();
  std::printf("{\"bench\":\"estimator\",\"metrics\":{%s}}\n", json.str().c_str());
  return {};
}

} // namespace darcy::apps
