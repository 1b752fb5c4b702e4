#include "actors/request_window.hpp"

#include <gtest/gtest.h>

namespace darcy::actors {
namespace {

TEST(request_window, RemembersTheLastIdsAndForgetsTheOldestFirst) {
  request_window window{3};
  for (uint64_t id : {1, 2, 3})
    window.remember(id);
  window.remember(2); // already remembered: does not push 1 out
  struct row {
    uint64_t id;
    bool seen;
  } before[] = {{1, true}, {2, true}, {3, true}, {4, false}};
  for (auto& r : before)
    EXPECT_EQ(window.seen(r.id), r.seen) << r.id;
  window.remember(4);
  row after[] = {{1, false}, {2, true}, {3, true}, {4, true}};
  for (auto& r : after)
    EXPECT_EQ(window.seen(r.id), r.seen) << r.id;
}

TEST(request_window, IdZeroIsNeverDeduplicated) {
  request_window window;
  window.remember(0);
  EXPECT_FALSE(window.seen(0));
}

} // namespace
} // namespace darcy::actors
