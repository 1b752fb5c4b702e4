// Which members hold each copy of a served model's embedding shards, where a lost copy is
// loaded again, and the order in which a request tries the copies.
#include "apps/serving/replica_set.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::serving {
namespace {

using names = std::vector<std::string>;

TEST(replica_set, members_are_dealt_to_the_copies_in_name_order) {
  struct assign_case {
    const char* what;
    names up;
    size_t replicas;
    std::vector<names> want; // empty: refused
  };
  for (auto& c : std::vector<assign_case>{
         {"one copy on every member", {"b", "a"}, 1, {{"a", "b"}}},
         {"two copies of two members each", {"d", "b", "c", "a"}, 2, {{"a", "c"}, {"b", "d"}}},
         {"an odd member goes to the first copy", {"c", "a", "b"}, 2, {{"a", "c"}, {"b"}}},
         {"fewer members than copies", {"a"}, 2, {}},
         {"no copy", {"a", "b"}, 0, {}},
       }) {
    SCOPED_TRACE(c.what);
    auto got = assign_replicas(c.up, c.replicas);
    if (c.want.empty()) {
      ASSERT_FALSE(got);
      EXPECT_TRUE(is(got.error(), errc::invalid_config)) << render(got.error());
      continue;
    }
    ASSERT_TRUE(got) << render(got.error());
    EXPECT_EQ(*got, c.want);
  }
}

TEST(replica_set, a_lost_copy_is_loaded_again_on_the_members_no_copy_in_service_holds) {
  struct reload_case {
    const char* what;
    names up;
    std::vector<names> in_service;
    names want;
  };
  for (auto& c : std::vector<reload_case>{
         {"the survivor of its own members", {"a", "b"}, {{"b"}}, {"a"}},
         {"a new member too", {"e", "a", "b", "d"}, {{"b", "d"}}, {"a", "e"}},
         {"every member serves another copy", {"a", "b"}, {{"a"}, {"b"}}, {}},
         {"no copy in service", {"b", "a"}, {}, {"a", "b"}},
       }) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(reload_members(c.up, c.in_service), c.want);
  }
  EXPECT_TRUE(all_up({"a", "c"}, {"c", "b", "a"}));
  EXPECT_FALSE(all_up({"a", "c"}, {"a", "b"}));
  EXPECT_TRUE(all_up({}, {}));
}

TEST(replica_set, requests_try_the_copies_in_service_round_the_ring_then_the_others) {
  struct order_case {
    const char* what;
    std::vector<bool> serving;
    size_t first;
    std::vector<size_t> want;
  };
  for (auto& c : std::vector<order_case>{
         {"all in service, from the first", {true, true, true}, 0, {0, 1, 2}},
         {"all in service, from the second", {true, true, true}, 1, {1, 2, 0}},
         {"one out of service goes last", {true, false, true}, 1, {2, 0, 1}},
         {"none in service: all the same", {false, false}, 1, {1, 0}},
         {"a single copy", {true}, 0, {0}},
       }) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(attempt_order(c.serving, c.first), c.want);
  }
}

} // namespace
} // namespace darcy::serving
