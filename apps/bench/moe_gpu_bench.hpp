// `darcy-bench moe-gpu`: the MoE layer of `darcy-bench moe` (both settings, 8,192 tokens,
// forward plus backward) on the GPU, against the same layer on the CPU path (compute/moe) and
// against a dense FFN of the same multiply-adds per token on the same GPU, in FP32 and with
// TF32 products; optionally the same MoE written plainly in PyTorch on the same GPU.
// Needs a CUDA build and a device; says so and exits 1 otherwise.
// Last line: {"bench":"moe_gpu","metrics":{...}}.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <string>

namespace darcy::apps {

struct moe_gpu_bench_options {
  uint32_t tokens = 8192;
  uint32_t dim = 512;
  uint32_t experts = 64;
  /// Timed GPU steps per layer, after 3 untimed; the median counts.
  uint32_t steps = 20;
  /// Timed CPU steps (after one untimed); 0 skips the CPU path.
  uint32_t cpu_steps = 3;
  /// Threads of the CPU path.
  uint32_t threads = 2;
  std::string settings = "seed,ffn";
  /// Also time the PyTorch peer on the GPU (skipped with a note when torch has no CUDA).
  bool peer = true;
  std::string python = "python3";
};

caf::error run_moe_gpu_bench(const moe_gpu_bench_options& opts);

} // namespace darcy::apps
