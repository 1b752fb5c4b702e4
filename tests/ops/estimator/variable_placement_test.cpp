// Variable placements: round robin, greedy by bytes, and the check of a user's placement.
#include "ops/estimator/variable_placement.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::ops::estimator {
namespace {

using compute::nn::matrix;

/// Parameters of the given sizes (1 × size each), named v0, v1, ...
struct variables {
  std::vector<compute::nn::parameter<float>> owned;
  variable_list list;

  explicit variables(const std::vector<Eigen::Index>& sizes) {
    owned.reserve(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i)
      owned.emplace_back("v" + std::to_string(i), matrix::Zero(1, sizes[i]));
    for (auto& p : owned)
      list.push_back(&p);
  }
};

TEST(variable_placement, builtin_placements_put_each_variable_where_their_rule_says) {
  struct case_t {
    const char* name;
    variable_placement placement;
    std::vector<Eigen::Index> sizes;
    uint32_t servers;
    std::vector<uint32_t> expected;
  };
  std::vector<case_t> cases{
    {"round robin", round_robin_placement(), {5, 5, 5, 5, 5}, 2, {0, 1, 0, 1, 0}},
    {"empty is round robin", {}, {1, 1, 1}, 3, {0, 1, 2}},
    // 100 → s0; 60 → s1; 50 → s1 (60 < 100); 40 → s0 (100 < 110); 1 → s1 (110 < 140).
    {"greedy by size", greedy_by_size_placement(), {40, 100, 1, 60, 50}, 2, {0, 0, 1, 1, 1}},
    {"greedy ties go to the first", greedy_by_size_placement(), {8, 8, 8}, 3, {0, 1, 2}},
    {"one server", greedy_by_size_placement(), {3, 9}, 1, {0, 0}},
  };
  for (auto& c : cases) {
    variables vars{c.sizes};
    auto got = place_variables(c.placement, vars.list, c.servers);
    ASSERT_TRUE(got) << c.name << ": " << render(got.error());
    EXPECT_EQ(*got, c.expected) << c.name;
  }
}

TEST(variable_placement, a_placement_naming_no_server_or_missing_a_variable_is_refused) {
  variables vars{{4, 4}};
  auto too_few = [](const variable_list&, uint32_t) { return std::vector<uint32_t>{0}; };
  auto out_of_range = [](const variable_list&, uint32_t) { return std::vector<uint32_t>{0, 2}; };
  for (auto placement : {variable_placement{too_few}, variable_placement{out_of_range}}) {
    auto got = place_variables(placement, vars.list, 2);
    ASSERT_FALSE(got);
    EXPECT_TRUE(is(got.error(), errc::invalid_config)) << render(got.error());
    EXPECT_NE(render(got.error()).find("variable placement"), std::string::npos);
  }
}

} // namespace
} // namespace darcy::ops::estimator
