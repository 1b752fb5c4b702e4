#include "stores/embedding/pending_rows.hpp"

#include <string>

#include <gtest/gtest.h>

#include "compute/hash.hpp"

namespace darcy::stores {
namespace {

TEST(pending_rows, EveryRowAddedIsFoundByKeyWithItsRecordPastTheRoomItWasMadeFor) {
  struct case_t {
    const char* name;
    size_t room;
    int rows;
  } cases[] = {{"within its room", 64, 50}, {"past it: the table grows", 4, 300}};
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    pending_rows rows{c.room};
    for (int i = 0; i < c.rows; ++i) {
      auto key = "key" + std::to_string(i);
      rows.add(key, compute::hash_key(key), "record of " + key, i % 2 == 0);
    }
    ASSERT_EQ(rows.size(), size_t(c.rows));
    for (int i = 0; i < c.rows; ++i) {
      auto key = "key" + std::to_string(i);
      auto at = rows.find(key, compute::hash_key(key));
      ASSERT_TRUE(at) << key;
      EXPECT_EQ(rows.key(*at), key);
      EXPECT_EQ(rows.record(*at), "record of " + key);
      EXPECT_EQ(rows.indexed(*at), i % 2 == 0);
      EXPECT_EQ(rows.hash(*at), compute::hash_key(key));
    }
    EXPECT_FALSE(rows.find("absent", compute::hash_key("absent")));
  }
}

TEST(pending_rows, AKeySharingAnothersHashIsNotTakenForIt) {
  pending_rows rows{8};
  rows.add("a", 42, "ra", true);
  rows.add("b", 42, "rb", false);
  ASSERT_TRUE(rows.find("a", 42));
  ASSERT_TRUE(rows.find("b", 42));
  EXPECT_EQ(rows.record(*rows.find("a", 42)), "ra");
  EXPECT_EQ(rows.record(*rows.find("b", 42)), "rb");
  EXPECT_FALSE(rows.find("c", 42)) << "same hash, another key";
  EXPECT_FALSE(rows.find("a", 43)) << "the key under another hash";
}

} // namespace
} // namespace darcy::stores
