#include "gpu/device.hpp"

#include <gtest/gtest.h>

namespace darcy::gpu {
namespace {

TEST(gpu_device, RunsWithOrWithoutAGpu) {
  auto count = device_count();
  EXPECT_GE(count, 0);
  if (!built_with_cuda()) {
    EXPECT_EQ(count, 0);
  }
  EXPECT_EQ(device_name(-1), "");
  EXPECT_EQ(device_name(count), "");
  for (int i = 0; i < count; ++i) {
    EXPECT_FALSE(device_name(i).empty()) << i;
  }
}

} // namespace
} // namespace darcy::gpu
