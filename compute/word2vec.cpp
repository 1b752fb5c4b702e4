#include "compute/word2vec.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Core>

namespace darcy::compute {

sigmoid_table::sigmoid_table() {
  for (size_t i = 0; i <= size; ++i) {
    auto x = std::exp((static_cast<float>(i) / size * 2 - 1) * max_exp);
    table_[i] = x / (x + 1);
  }
}

size_t train_sgns(const sgns_plan& plan, float alpha, std::span<float> in, std::span<float> out,
                  size_t dim, const sigmoid_table& sigmoid) {
  using vec = Eigen::Map<Eigen::VectorXf>;
  auto stride = plan.negative + 2u;
  auto d = static_cast<Eigen::Index>(dim);
  Eigen::VectorXf neu1e(d);
  size_t trained = 0;
  for (size_t p = 0; p + stride <= plan.entries.size(); p += stride) {
    const auto* pair = plan.entries.data() + p;
    vec l1{in.data() + size_t{pair[0]} * dim, d};
    neu1e.setZero();
    for (uint32_t k = 0; k <= plan.negative; ++k) {
      auto target = pair[k + 1];
      if (target == skipped_slot)
        continue;
      float label = k == 0 ? 1.0f : 0.0f;
      vec l2{out.data() + size_t{target} * dim, d};
      auto f = l1.dot(l2);
      float g;
      if (f > sigmoid_table::max_exp)
        g = (label - 1) * alpha;
      else if (f < -sigmoid_table::max_exp)
        g = label * alpha;
      else
        g = (label - sigmoid(f)) * alpha;
      neu1e.noalias() += g * l2;
      l2.noalias() += g * l1;
    }
    l1 += neu1e;
    ++trained;
  }
  return trained;
}

float keep_probability(uint64_t count, uint64_t total, double sample) {
  if (sample <= 0 || count == 0)
    return 1.0f;
  auto threshold = sample * static_cast<double>(total);
  auto c = static_cast<double>(count);
  return static_cast<float>(std::min(1.0, (std::sqrt(c / threshold) + 1) * threshold / c));
}

float decayed_alpha(float alpha, uint64_t done, uint64_t total) {
  auto rate = alpha * (1 - static_cast<float>(done) / static_cast<float>(total + 1));
  return std::max(rate, alpha * 1e-4f);
}

} // namespace darcy::compute
