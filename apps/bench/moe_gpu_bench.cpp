#include "apps/bench/moe_gpu_bench.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>

#include "apps/bench/moe_settings.hpp"
#include "apps/bench/peer_scripts.hpp"
#include "apps/bench/python_peer.hpp"
#include "compute/moe/gpu_parameters.hpp"
#include "compute/nn/init.hpp"
#include "compute/stats.hpp"
#include "gpu/device.hpp"
#include "gpu/moe_layer.hpp"
#include "messages/error.hpp"

namespace darcy::apps {

namespace {

using clock = std::chrono::steady_clock;
using compute::nn::matrix;

/// Median seconds of one GPU step over the prepared tokens; an error message on failure.
double time_steps(gpu::moe_layer& layer, const moe_gpu_bench_options& o, std::string& error) {
  if (error = layer.prepare(static_cast<int>(o.tokens), 11); !error.empty())
    return 0;
  std::vector<double> times;
  for (uint32_t i = 0; i < o.steps + 3; ++i) {
    auto start = clock::now();
    if (error = layer.step(); !error.empty())
      return 0;
    if (i >= 3)
      times.push_back(std::chrono::duration<double>(clock::now() - start).count());
  }
  return compute::median(std::move(times));
}

/// Tokens per second of a GPU layer of `shape` with parameters `p`; the experts' batches of its
/// last step into `batches` when given.
double gpu_rate(const gpu::moe_shape& shape, const gpu::moe_parameters& p,
                const moe_gpu_bench_options& o, std::string& error,
                std::vector<int>* batches = nullptr) {
  auto layer = gpu::moe_layer::make(shape, error);
  if (!layer)
    return 0;
  if (error = layer->set_parameters(p); !error.empty())
    return 0;
  auto seconds = time_steps(*layer, o, error);
  if (batches)
    *batches = layer->expert_batches();
  return error.empty() ? o.tokens / seconds : 0;
}

/// Tokens per second of the setting's MoE on the GPU with the CPU layer's parameters.
double gpu_moe_rate(const moe_setting& s, compute::moe::moe_layer<float>& cpu, bool tf32,
                    bool grouped, const moe_gpu_bench_options& o, std::vector<int>& batches,
                    std::string& error) {
  auto shape = compute::moe::gpu_shape(s.cfg);
  shape.tf32 = tf32;
  shape.grouped = grouped;
  return gpu_rate(shape, compute::moe::gpu_parameters(cpu), o, error, &batches);
}

/// Tokens per second of the setting's experts (the CPU layer's parameters) behind a noisy
/// top-k gate of the same k, with the importance and load losses (weights 0.01) and seeded
/// noise weights.
double gpu_noisy_rate(const moe_setting& s, compute::moe::moe_layer<float>& cpu,
                      const moe_gpu_bench_options& o, std::string& error) {
  auto shape = compute::moe::gpu_shape(s.cfg);
  shape.batchwise = false;
  shape.noisy = true;
  shape.importance_weight = shape.load_weight = 0.01f;
  auto p = compute::moe::gpu_parameters(cpu);
  std::mt19937_64 rng{13};
  matrix w = compute::nn::normal<float>(s.cfg.dim, s.cfg.gating.experts, 0.01f, rng);
  p.w_noise.assign(w.data(), w.data() + w.size());
  return gpu_rate(shape, p, o, error);
}

/// Tokens per second of the dense FFN dim → dense_hidden → dim on the GPU: plain products.
double gpu_dense_rate(const moe_setting& s, bool tf32, const moe_gpu_bench_options& o,
                      std::string& error) {
  gpu::moe_shape shape{.dim = int(o.dim),
                       .experts = 1,
                       .k = 1,
                       .hidden = int(s.dense_hidden),
                       .gated = false,
                       .tf32 = tf32,
                       .grouped = false};
  std::mt19937_64 rng{5};
  auto values = [&](uint32_t r, uint32_t c) {
    matrix m = compute::nn::normal<float>(r, c, 1.0f / std::sqrt(float(r)), rng);
    return std::vector<float>(m.data(), m.data() + m.size());
  };
  gpu::moe_parameters p{{},
                        values(o.dim, s.dense_hidden),
                        std::vector<float>(s.dense_hidden),
                        values(s.dense_hidden, o.dim),
                        std::vector<float>(o.dim)};
  return gpu_rate(shape, p, o, error);
}

/// The PyTorch peer's MoE tokens/s on the GPU; 0 with `note` set when it cannot run.
double torch_gpu_rate(const moe_setting& s, const moe_gpu_bench_options& o, std::string& note) {
  auto dir =
    (std::filesystem::temp_directory_path() / ("darcy-bench-moe-gpu-" + std::to_string(::getpid())))
      .string();
  std::filesystem::create_directories(dir);
  std::ostringstream args;
  args << s.name << " " << o.tokens << " " << o.dim << " " << o.experts << " " << s.cfg.gating.k
       << " " << s.cfg.hidden << " " << s.dense_hidden << " " << o.steps << " " << o.threads
       << " cuda";
  auto lines = run_python(o.python, peers::moe_torch_py, args.str(), dir);
  std::filesystem::remove_all(dir);
  if (!lines) {
    note = render(lines.error());
    return 0;
  }
  auto peer = peer_result(*lines, "moe_tokens_per_s");
  if (!peer) {
    note = render(peer.error());
    return 0;
  }
  note = "torch " + peer->value("torch", std::string{"?"});
  return peer->value("moe_tokens_per_s", 0.0);
}

} // namespace

caf::error run_moe_gpu_bench(const moe_gpu_bench_options& o) {
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
  if (!gpu::built_with_cuda() || gpu::device_count() == 0) {
    return make_error(errc::unavailable,
                      gpu::built_with_cuda() ? "no CUDA device" : "this build has no CUDA kernels");
  }
  auto device = gpu::device_name(0);
  std::printf(
    "%s; %u tokens, d = %u, %u experts, median of %u GPU steps (forward + backward); "
    "CPU path on %u threads\n",
    device.c_str(), o.tokens, o.dim, o.experts, o.steps, o.threads);
  std::ostringstream json;
  double worst_cpu = 1e300, worst_dense = 1e300;
  for (auto& name : names) {
    auto s = make_moe_setting(name, o.dim, o.experts);
    std::mt19937_64 rng{7};
    auto cpu = make_bench_layer(s, rng);
    if (!cpu) {
      return make_error(cpu.error());
    }
    std::string error;
    std::vector<int> batches;
    double fp32 = gpu_moe_rate(s, **cpu, false, true, o, batches, error);
    double streams = error.empty() ? gpu_moe_rate(s, **cpu, false, false, o, batches, error) : 0;
    double tf32 = error.empty() ? gpu_moe_rate(s, **cpu, true, true, o, batches, error) : 0;
    double dense = error.empty() ? gpu_dense_rate(s, false, o, error) : 0;
    double dense_tf32 = error.empty() ? gpu_dense_rate(s, true, o, error) : 0;
    double noisy = error.empty() ? gpu_noisy_rate(s, **cpu, o, error) : 0;
    if (!error.empty()) {
      return make_error(errc::unavailable, name + ": " + error);
    }
    double total = 0;
    int lo = batches.empty() ? 0 : batches[0], hi = lo;
    for (auto b : batches) {
      total += b;
      lo = std::min(lo, b);
      hi = std::max(hi, b);
    }
    double mean_batch = batches.empty() ? 0 : total / batches.size();
    std::printf(
      "%s: gpu moe %.0f tokens/s grouped, %.0f on streams (tf32 grouped %.0f), gpu dense "
      "(hidden %u) %.0f (tf32 %.0f), expert batch %.1f (%d..%d)\n",
      name.c_str(), fp32, streams, tf32, s.dense_hidden, dense, dense_tf32, mean_batch, lo, hi);
    std::printf(
      "%s: gpu moe behind a noisy top-%u gate with importance and load losses %.0f "
      "tokens/s (%.2fx the plain gate's)\n",
      name.c_str(), s.cfg.gating.k, noisy, noisy / fp32);
    json << "\"" << name << "_gpu_tokens_per_s\":" << fp32 << ",\"" << name
         << "_gpu_streams_tokens_per_s\":" << streams << ",\"" << name
         << "_gpu_streams_moe_vs_dense_flops\":" << streams / dense << ",\"" << name
         << "_gpu_tf32_tokens_per_s\":" << tf32 << ",\"" << name
         << "_gpu_dense_tokens_per_s\":" << dense << ",\"" << name
         << "_gpu_dense_tf32_tokens_per_s\":" << dense_tf32 << ",\"" << name
         << "_gpu_moe_vs_dense_flops\":" << fp32 / dense << ",\"" << name
         << "_gpu_tf32_moe_vs_dense_flops\":" << tf32 / dense_tf32 << ",\"" << name
         << "_expert_batch\":" << mean_batch << ",\"" << name
         << "_gpu_noisy_losses_tokens_per_s\":" << noisy << ",\"" << name
         << "_gpu_noisy_losses_vs_plain\":" << noisy / fp32 << ",";
    worst_dense = std::min(worst_dense, fp32 / dense);
    if (o.cpu_steps > 0) {
      (*cpu)->set_threads(o.threads);
      std::mt19937_64 data{11};
      matrix x = compute::nn::normal<float>(o.tokens, o.dim, 1.0f, data);
      matrix dy = compute::nn::normal<float>(o.tokens, o.dim, 1.0f, data);
      double cpu_rate = o.tokens / median_step_seconds(**cpu, x, dy, o.cpu_steps);
      std::printf("%s: cpu path %.0f tokens/s on %u threads: gpu is %.1fx\n", name.c_str(),
                  cpu_rate, o.threads, fp32 / cpu_rate);
      json << "\"" << name << "_cpu_tokens_per_s\":" << cpu_rate << ",\"" << name
           << "_gpu_vs_cpu\":" << fp32 / cpu_rate << ",";
      worst_cpu = std::min(worst_cpu, fp32 / cpu_rate);
    }
    if (o.peer) {
      std::string note;
      double torch = torch_gpu_rate(s, o, note);
      if (torch > 0) {
        std::printf("%s: %s moe on the gpu %.0f tokens/s: darcy is %.2fx\n", name.c_str(),
                    note.c_str(), torch, fp32 / torch);
        json << "\"" << name << "_torch_gpu_tokens_per_s\":" << torch << ",\"" << name
             << "_gpu_moe_vs_torch\":" << fp32 / torch << ",";
      } else {
        std::printf("%s: the PyTorch peer did not run on the gpu: %s\n", name.c_str(),
                    note.c_str());
      }
    }
  }
  json << "\"gpu_moe_vs_dense_flops\":" << worst_dense;
  if (o.cpu_steps > 0)
    json << ",\"gpu_vs_cpu\":" << worst_cpu;
  json << ",\"cpu_threads\":" << o.threads << ",\"cores\":" << std::thread::hardware_concurrency();
  std::printf("{\"bench\":\"moe_gpu\",\"device\":\"%s\",\"metrics\":{%s}}\n", device.c_str(),
              json.str().c_str());
  return {};
}

} // namespace darcy::apps
