// The CUDA MoE kernels against their CPU references in compute/moe: top-k gating against
// top_k_mask with the renormalised softmax, dispatch and combine against the dispatch plan's,
// and the grouped GEMM against each expert's product. Skipped without a device; without CUDA
// every kernel reports so.
#include "gpu/moe_kernels.hpp"

#include <random>

#include <gtest/gtest.h>

#include "compute/moe/dispatch.hpp"
#include "compute/moe/masks.hpp"
#include "compute/nn/init.hpp"
#include "gpu/device.hpp"

namespace darcy::gpu {
namespace {

using compute::nn::matrix;

TEST(gpu_moe_kernels, every_kernel_reports_when_there_is_no_gpu) {
  if (device_count() > 0)
    GTEST_SKIP() << "a device is present";
  float x = 0;
  int i = 0;
  EXPECT_FALSE(top_k_gating(&x, 1, 1, 1, &i, &x).empty());
  EXPECT_FALSE(dispatch_rows(&x, 1, 1, &i, 1, &x).empty());
  EXPECT_FALSE(combine_rows(&x, 1, 1, &i, &x, 1, &x).empty());
}

TEST(gpu_moe_kernels, a_step_on_the_gpu_equals_the_cpu_reference) {
  if (device_count() == 0)
    GTEST_SKIP() << "no CUDA device";
  constexpr int rows = 300, n = 16, k = 4, d = 24;
  std::mt19937_64 rng{1};
  matrix logits = compute::nn::normal<float>(rows, n, 1.0f, rng);
  matrix x = compute::nn::normal<float>(rows, d, 1.0f, rng);
  // Gating.
  std::vector<int> idx(rows * k);
  std::vector<float> g(rows * k);
  ASSERT_EQ(top_k_gating(logits.data(), rows, n, k, idx.data(), g.data()), "");
  matrix mask = compute::moe::top_k_mask<float>(logits, k);
  matrix gates = matrix::Zero(rows, n);
  for (int r = 0; r < rows; ++r) {
    float top = logits.row(r).maxCoeff(), sum = 0;
    for (int c = 0; c < n; ++c)
      sum += mask(r, c) * std::exp(logits(r, c) - top);
    for (int c = 0; c < n; ++c)
      gates(r, c) = mask(r, c) * std::exp(logits(r, c) - top) / sum;
    for (int j = 0; j < k; ++j) {
      EXPECT_EQ(mask(r, idx[r * k + j]), 1.0f) << "row " << r;
      EXPECT_NEAR(g[r * k + j], gates(r, idx[r * k + j]), 1e-5) << "row " << r;
    }
  }
  // Dispatch, the experts' products, combine.
  auto plan = compute::moe::make_plan<float>(gates);
  std::vector<int> source(plan.rows.begin(), plan.rows.end());
  std::vector<int> offsets(plan.offsets.begin(), plan.offsets.end());
  std::vector<float> slot_gates(plan.gates.begin(), plan.gates.end());
  int slots = static_cast<int>(source.size());
  matrix in(slots, d);
  ASSERT_EQ(dispatch_rows(x.data(), rows, d, source.data(), slots, in.data()), "");
  EXPECT_TRUE(in.isApprox(compute::moe::dispatch<float>(x, plan), 1e-6f));
  matrix weights = compute::nn::normal<float>(n * d, d, 0.2f, rng);
  matrix out(slots, d), expected(slots, d);
  ASSERT_EQ(grouped_gemm(in.data(), slots, d, d, weights.data(), offsets.data(), n, out.data()),
            "");
  for (int e = 0; e < n; ++e)
    expected.middleRows(offsets[e], offsets[e + 1] - offsets[e]) =
      in.middleRows(offsets[e], offsets[e + 1] - offsets[e]) * weights.middleRows(e * d, d);
  EXPECT_TRUE(out.isApprox(expected, 1e-4f));
  matrix y(rows, d);
  ASSERT_EQ(combine_rows(out.data(), slots, d, source.data(), slot_gates.data(), rows, y.data()),
            "");
  EXPECT_TRUE(y.isApprox(compute::moe::combine<float>(expected, plan), 1e-4f));
}

} // namespace
} // namespace darcy::gpu
