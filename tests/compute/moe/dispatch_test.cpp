#include "compute/moe/dispatch.hpp"

#include <gtest/gtest.h>

namespace darcy::compute::moe {
namespace {

using mat = matrix_t<double>;

TEST(moe_dispatch, a_plan_lists_each_experts_examples_in_batch_order_and_its_inverse) {
  mat gates(3, 3);
  gates << 0.5, 0.5, 0, //
    0, 0, 1,            //
    0.25, 0, 0.75;
  auto plan = make_plan<double>(gates);
  EXPECT_EQ(plan.offsets, (std::vector<uint32_t>{0, 2, 3, 5}));
  EXPECT_EQ(plan.rows, (std::vector<uint32_t>{0, 2, 0, 1, 2}));
  EXPECT_EQ(plan.gates, (std::vector<double>{0.5, 0.25, 0.5, 1, 0.75}));
  EXPECT_EQ(plan.row_offsets, (std::vector<uint32_t>{0, 2, 3, 5}));
  EXPECT_EQ(plan.row_slots, (std::vector<uint32_t>{0, 2, 3, 1, 4}));
}

TEST(moe_dispatch, dispatch_then_combine_weights_each_row_by_its_gates_on_any_thread_count) {
  mat gates(4, 2);
  gates << 1, 0, 0.5, 0.5, 0, 1, 0.25, 0.75;
  auto plan = make_plan<double>(gates);
  mat x(4, 3);
  x << 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12;
  for (size_t threads : {1, 2, 3}) {
    auto in = dispatch<double>(x, plan, threads);
    // Identity experts: combine gives back Σ_e gate_e · x = x, since each row's gates sum to 1.
    EXPECT_TRUE(combine<double>(in, plan, threads).isApprox(x)) << threads;
    EXPECT_TRUE(
      dispatch_backward<double>(in, plan, threads)
        .isApprox((x.array().colwise() * mat{{1}, {2}, {1}, {2}}.col(0).array()).matrix()))
      << "each row comes back once per expert it went to";
  }
}

TEST(moe_dispatch, balanced_ranges_split_experts_by_their_examples) {
  mat gates = mat::Zero(8, 4);
  for (int r = 0; r < 6; ++r)
    gates(r, 0) = 1; // expert 0 takes 6 examples, experts 1..3 one or none
  gates(6, 1) = 1;
  gates(7, 3) = 1;
  auto plan = make_plan<double>(gates);
  EXPECT_EQ(balanced_expert_ranges(plan, 1), (std::vector<uint32_t>{0, 4}));
  EXPECT_EQ(balanced_expert_ranges(plan, 2), (std::vector<uint32_t>{0, 1, 4}));
  auto many = balanced_expert_ranges(plan, 9);
  EXPECT_EQ(many.front(), 0u);
  EXPECT_EQ(many.back(), 4u);
  EXPECT_TRUE(std::is_sorted(many.begin(), many.end()));
}

} // namespace
} // namespace darcy::compute::moe
