#include "runtime/log.hpp"

#include <gtest/gtest.h>

namespace darcy::runtime {
namespace {

TEST(log, EveryListedLevelSetsAndAnUnknownOneChangesNothing) {
  for (auto& name : log_level_names()) {
    EXPECT_TRUE(set_log_level(name)) << name;
    EXPECT_EQ(spdlog::level::to_string_view(logger().level()), name == "warn" ? "warning" : name);
  }
  ASSERT_TRUE(set_log_level("error"));
  EXPECT_FALSE(set_log_level("loud"));
  EXPECT_FALSE(set_log_level(""));
  EXPECT_EQ(logger().level(), spdlog::level::err);
  EXPECT_FALSE(logger().should_log(spdlog::level::warn));
  EXPECT_TRUE(logger().should_log(spdlog::level::err));
  ASSERT_TRUE(set_log_level(default_log_level));
}

} // namespace
} // namespace darcy::runtime
