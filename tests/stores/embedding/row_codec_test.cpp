// The row record of stores/row_codec: a round trip keeps every field, with and without
// optimizer slots (plain SGD has none: the empty vectors are what UBSan caught once), and a
// record of the wrong size is refused.
#include "stores/embedding/row_codec.hpp"

#include <gtest/gtest.h>

namespace darcy::stores {
namespace {

struct codec_case {
  std::string name;
  size_t dim;
  /// The update rule's slot floats a row.
  size_t slot_floats;
};

TEST(row_codec, a_round_trip_keeps_every_field_with_or_without_slots) {
  const std::vector<codec_case> cases = {{"no slots (sgd)", 3, 0},
                                         {"one slot a value (adagrad)", 3, 3},
                                         {"two slots a value (adam)", 4, 8},
                                         {"one slot a row (row-wise adagrad)", 4, 1}};
  for (auto& c : cases) {
    std::vector<float> values(c.dim), slots(c.slot_floats);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = 0.5f * float(i) - 1;
    for (size_t i = 0; i < slots.size(); ++i)
      slots[i] = 2.0f + float(i);
    row_record row{"key", values, slots, 7, 9, -3};
    std::string bytes;
    append_row_record(row, bytes);
    ASSERT_EQ(bytes.size(), row_record_bytes(c.dim, c.slot_floats)) << c.name;
    std::vector<float> got_values, got_slots;
    row_record got;
    ASSERT_TRUE(decode_row_record("key", bytes, c.dim, c.slot_floats, got_values, got_slots, got))
      << c.name;
    EXPECT_EQ(got.key, "key") << c.name;
    EXPECT_EQ(std::vector<float>(got.values.begin(), got.values.end()), values) << c.name;
    EXPECT_EQ(std::vector<float>(got.slots.begin(), got.slots.end()), slots) << c.name;
    EXPECT_EQ(got.frequency, 7u) << c.name;
    EXPECT_EQ(got.updates, 9u) << c.name;
    EXPECT_EQ(got.last_update, -3) << c.name;
  }
}

TEST(row_codec, a_record_of_the_wrong_size_is_refused_and_leaves_the_row_alone) {
  std::vector<float> values(3, 1.0f);
  std::string bytes;
  append_row_record({"k", values, {}, 1, 1, 1}, bytes);
  std::vector<float> got_values, got_slots;
  row_record got;
  EXPECT_FALSE(decode_row_record("k", bytes, 3, 1, got_values, got_slots, got));
  EXPECT_FALSE(decode_row_record("k", bytes.substr(1), 3, 0, got_values, got_slots, got));
  EXPECT_EQ(got.frequency, 0u);
  EXPECT_TRUE(got.key.empty());
}

} // namespace
} // namespace darcy::stores
