#include "stores/embedding/huge_pages.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/process/machine.hpp"

namespace darcy::stores {
namespace {

TEST(huge_pages, LargeBlocksAreHugePageAlignedAndEverySizeIsWritable) {
  struct size_case {
    size_t bytes;
    bool aligned;
  };
  for (auto c : std::vector<size_case>{{0, false},
                                       {24, false},
                                       {huge_page_bytes - 1, false},
                                       {huge_page_bytes, true},
                                       {huge_page_bytes * 3 + 5, true}}) {
    auto* p = static_cast<unsigned char*>(allocate_huge_pages(c.bytes));
    ASSERT_NE(p, nullptr) << c.bytes;
    if (c.aligned) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % huge_page_bytes, 0u) << c.bytes;
    }
    for (size_t i = 0; i < c.bytes; i += 4096)
      p[i] = static_cast<unsigned char>(i);
    if (c.bytes > 0)
      p[c.bytes - 1] = 7;
    free_huge_pages(p, c.bytes);
  }
}

TEST(huge_pages, AFreedLargeBlockGoesBackToTheSystem) {
  constexpr size_t bytes = 64 << 20;
  auto before = runtime::resident_bytes();
  auto* p = static_cast<unsigned char*>(allocate_huge_pages(bytes));
  std::memset(p, 1, bytes);
  EXPECT_GE(runtime::resident_bytes(), before + bytes * 3 / 4);
  free_huge_pages(p, bytes);
  EXPECT_LE(runtime::resident_bytes(), before + (8 << 20)) << "not kept in malloc's heap";
}

TEST(huge_pages, VectorWithTheAllocatorValueInitialisesAndGrows) {
  std::vector<uint64_t, huge_page_allocator<uint64_t>> v(huge_page_bytes / sizeof(uint64_t));
  for (auto x : v)
    ASSERT_EQ(x, 0u);
  v.resize(v.size() * 2, 9);
  EXPECT_EQ(v.front(), 0u);
  EXPECT_EQ(v.back(), 9u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % huge_page_bytes, 0u);
}

TEST(huge_pages, AdviceKeepsWhatABufferHoldsAndAssignGivesZeros) {
  // Sizes below, at and past one huge page, and a start off a page boundary.
  for (size_t n : {size_t{100}, huge_page_bytes / sizeof(float), 3 * huge_page_bytes / 4 + 17}) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(i % 1000);
    advise_huge_pages(v.data() + 1, (n - 1) * sizeof(float), true);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(v[i], static_cast<float>(i % 1000)) << n << " at " << i;
    assign_on_huge_pages(v, n + 5);
    ASSERT_EQ(v.size(), n + 5);
    EXPECT_EQ(std::count(v.begin(), v.end(), 0.0f), static_cast<ptrdiff_t>(n + 5));
  }
  advise_huge_pages(nullptr, 1 << 30, true); // nothing to advise: no effect
}

} // namespace
} // namespace darcy::stores
