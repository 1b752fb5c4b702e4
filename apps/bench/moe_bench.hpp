// `darcy-bench moe`: one MoE layer's forward plus backward, in tokens per second, in two
// settings: the paper's (64 linear 512 × 512 experts, batchwise mask, k = 4) and a modern one
// (64 ReLU FFN experts 512 → 1024 → 512, top-2). Peers in the same run: a Darcy dense FFN of
// the same multiply-adds per token, and the same MoE and dense layers written plainly in
// PyTorch (python3-torch) on the same threads. Then the same layer with its experts as actors,
// with 1 and 2 data-parallel replicas combined per step.
// Last line: {"bench":"moe","metrics":{...}}.
#pragma once

#include <caf/error.hpp>

#include <cstdint>
#include <string>

namespace darcy::apps {

struct moe_bench_options {
  uint32_t tokens = 8192;
  uint32_t dim = 512;
  uint32_t experts = 64;
  /// Timed steps per layer (after one untimed); the median counts.
  uint32_t steps = 5;
  uint32_t threads = 2;
  /// Comma-separated: seed (the paper's), ffn (top-2 FFN experts).
  std::string settings = "seed,ffn";
  bool peer = true;
  /// Also run each setting as a router over expert actors in this process, with 1 and 2
  /// replicas of `tokens` tokens combined per step.
  bool routers = true;
  std::string python = "/usr/bin/python3";
};

caf::error run_moe_bench(const moe_bench_options& opts);

} // namespace darcy::apps
