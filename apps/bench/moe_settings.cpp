#include "apps/bench/moe_settings.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "compute/nn/init.hpp"
#include "compute/stats.hpp"

namespace darcy::apps {

moe_setting make_moe_setting(const std::string& name, uint32_t dim, uint32_t experts) {
  moe_setting s{name, {}, 0};
  s.cfg.dim = dim;
  s.cfg.gating.experts = experts;
  s.cfg.gating.seed = 1;
  if (name == "seed") {
    s.cfg.expert = expert_kind::linear;
    s.cfg.gating.mask = mask_kind::batchwise;
    s.cfg.gating.k = 4;
    s.dense_hidden = s.cfg.gating.k * dim / 2; // 2·d·h = k·d²
  } else {
    s.cfg.expert = expert_kind::ffn;
    s.cfg.hidden = 2 * dim;
    s.cfg.gating.mask = mask_kind::top_k;
    s.cfg.gating.k = 2;
    s.dense_hidden = s.cfg.gating.k * s.cfg.hidden; // k experts of 2·d·hidden
  }
  return s;
}

std::vector<std::string> parse_moe_settings(const std::string& list, std::string& error) {
  std::vector<std::string> names;
  for (std::string_view rest = list; !rest.empty();) {
    auto name = std::string{rest.substr(0, rest.find(','))};
    rest.remove_prefix(std::min(rest.size(), name.size() + 1));
    if (name != "seed" && name != "ffn") {
      error = "unknown setting '" + name + "' (seed, ffn)";
      return {};
    }
    names.push_back(name);
  }
  if (names.empty())
    error = "no setting named (seed, ffn)";
  return names;
}

plain_expected<std::unique_ptr<compute::moe::moe_layer<float>>> make_bench_layer(
  const moe_setting& s, std::mt19937_64& rng) {
  auto layer = compute::moe::moe_layer<float>::make(s.cfg);
  if (!layer)
    return layer;
  auto d = s.cfg.dim;
  (*layer)->parameters().front()->value =
    compute::nn::normal<float>(d, s.cfg.gating.experts, 1.0f / std::sqrt(float(d)), rng);
  return layer;
}

double median_step_seconds(compute::nn::layer<float>& layer, const compute::nn::matrix& x,
                           const compute::nn::matrix& dy, uint32_t steps) {
  using clock = std::chrono::steady_clock;
  std::vector<double> times;
  for (uint32_t i = 0; i <= steps; ++i) {
    for (auto* p : layer.parameters())
      p->zero_grad();
    auto start = clock::now();
    compute::nn::matrix y = layer.forward(x);
    compute::nn::matrix dx = layer.backward(dy);
    auto seconds = std::chrono::duration<double>(clock::now() - start).count();
    if (i > 0)
      times.push_back(seconds);
  }
  return compute::median(std::move(times));
}

} // namespace darcy::apps
