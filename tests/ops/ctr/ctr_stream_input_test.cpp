// ops/ctr/ctr_stream_input: the shards of a stream are its rows r % n == w, every row in one of
// them; a pipeline seeks to another's position (or any row, up to the stream's end) and goes
// on with the same batches; bad options are refused.
#include "ops/ctr/ctr_stream_input.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::ops::ctr {
namespace {

const ctr_stream_options generated{.generator = {.seed = 5, .max_ids = 100}, .rows = 90};

/// Every batch of `in` until its end: each row's label and first categorical string.
std::vector<std::pair<float, std::string>> rows_of(estimator::input_pipeline& in) {
  std::vector<std::pair<float, std::string>> out;
  for (;;) {
    auto b = in.next();
    EXPECT_TRUE(b) << render(b.error());
    if (!b || !*b)
      return out;
    auto& c1 = (*b)->features.at(ctr_field_key(0)).strings;
    for (Eigen::Index r = 0; r < (*b)->labels.rows(); ++r)
      out.emplace_back((*b)->labels(r, 0), c1[size_t(r)].empty() ? "" : c1[size_t(r)][0]);
  }
}

TEST(ctr_stream_input, the_shards_of_a_stream_are_its_rows_by_index_each_in_one_of_them) {
  auto whole = ctr_stream_input("generate", generated, {.batch_size = 7})();
  ASSERT_TRUE(whole);
  auto all = rows_of(**whole);
  ASSERT_EQ(all.size(), 90u) << "the stream's rows, then its end";
  for (uint32_t shards : {2u, 3u}) {
    for (uint32_t shard = 0; shard < shards; ++shard) {
      auto part = ctr_stream_input("generate", generated,
                                   {.batch_size = 4, .shard = shard, .shards = shards})();
      ASSERT_TRUE(part);
      auto got = rows_of(**part);
      ASSERT_EQ(got.size(), 90u / shards) << shard << " of " << shards;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], all[i * shards + shard]) << shard << " of " << shards << ", row " << i;
    }
  }
}

TEST(ctr_stream_input, a_pipeline_seeks_to_another_ones_position_and_goes_on_alike) {
  auto input = ctr_stream_input("generate", generated, {.batch_size = 8, .shard = 1, .shards = 2});
  auto first = input();
  ASSERT_TRUE(first);
  ASSERT_TRUE((*first)->next());
  ASSERT_TRUE((*first)->next());
  auto position = (*first)->position();
  EXPECT_EQ(position, "32") << "the rows 0..31 read, the other shard's counted";
  auto second = input();
  ASSERT_TRUE(second);
  ASSERT_FALSE((*second)->seek(position));
  EXPECT_EQ(rows_of(**second), rows_of(**first));
  EXPECT_TRUE(is((*second)->seek("x"), errc::invalid_argument));
  EXPECT_TRUE(is((*second)->seek("1000"), errc::invalid_argument)) << "past the stream's end";
}

TEST(ctr_stream_input,
     a_seek_between_two_of_a_shards_rows_keeps_the_next_and_one_to_the_end_is_not_past_it) {
  auto whole = ctr_stream_input("generate", generated, {.batch_size = 7})();
  ASSERT_TRUE(whole);
  auto all = rows_of(**whole);
  auto input = ctr_stream_input("generate", generated, {.batch_size = 4, .shard = 1, .shards = 2});
  auto p = input();
  ASSERT_TRUE(p);
  // Rows 0..32 read, the last of them shard 0's: shard 1 goes on with row 33, its next.
  ASSERT_FALSE((*p)->seek("33"));
  auto rest = rows_of(**p);
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.front(), all[33]);
  EXPECT_EQ(rest.size(), (90u - 33u + 1u) / 2u);
  // The end of a stream of 90 rows, whichever shard read its last row: nothing left.
  ASSERT_FALSE((*p)->seek("90"));
  EXPECT_TRUE(rows_of(**p).empty());
}

TEST(ctr_stream_input, a_batch_of_no_rows_or_a_shard_past_the_count_is_refused) {
  struct {
    const char* name;
    ctr_input_options o;
  } cases[] = {
    {"no rows a batch", {.batch_size = 0}},
    {"shard 2 of 2", {.shard = 2, .shards = 2}},
    {"no shards", {.shards = 0}},
  };
  for (auto& c : cases)
    EXPECT_TRUE(is(ctr_stream_input("generate", generated, c.o)().error(), errc::invalid_config))
      << c.name;
}

} // namespace
} // namespace darcy::ops::ctr
