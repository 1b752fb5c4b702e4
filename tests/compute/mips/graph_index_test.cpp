#include "compute/mips/graph_index.hpp"

#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "compute/mips/exact_index.hpp"
#include "tests/support/topic_items.hpp"

namespace darcy::compute::mips {
namespace {

using test::topic_items;

TEST(graph_index, reaches_its_recall_and_a_wider_beam_reaches_more) {
  auto items = topic_items(8000, 24, 1);
  auto queries = topic_items(200, 24, 2);
  auto truth = exact_index::make(items)->search(queries, 10);
  ASSERT_TRUE(truth);
  struct build_case {
    const char* what;
    graph_index_options options;
    double recall;
  };
  // The augmented graph reaches less on these items (0.951 at ef 200).
  std::vector<build_case> cases{
    {"by inner product, one thread", {.m = 12, .ef_construction = 80}, 0.97},
    {"by inner product, two threads", {.m = 12, .ef_construction = 80, .threads = 2}, 0.97},
    {"augmented", {.m = 12, .ef_construction = 80, .augmented = true}, 0.94},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto index = graph_index::build(items, {}, c.options);
    ASSERT_TRUE(index) << render(index.error());
    EXPECT_EQ(index->size(), 8000u);
    auto narrow = index->search(queries, 10, {.ef = 10});
    auto wide = index->search(queries, 10, {.ef = 200, .threads = 2});
    ASSERT_TRUE(narrow && wide);
    auto r_narrow = recall_at(*truth, *narrow);
    auto r_wide = recall_at(*truth, *wide);
    EXPECT_GE(r_wide, c.recall);
    EXPECT_GT(r_wide, r_narrow);
    for (auto& hits : *wide)
      for (size_t i = 1; i < hits.size(); ++i)
        EXPECT_FALSE(ranks_before(hits[i], hits[i - 1])) << "hits best first";
  }
}

TEST(graph_index, l2_items_are_linked_and_found_by_their_l2_distance) {
  // [x, -|x|^2 / 2] against [q, 1]: the inner product ranks items by |q - x|.
  auto raw = topic_items(6000, 16, 5);
  auto raw_queries = topic_items(100, 16, 6);
  row_matrix items(raw.rows(), 17), queries(raw_queries.rows(), 17);
  items << raw, -0.5f * raw.rowwise().squaredNorm();
  queries << raw_queries, row_matrix::Ones(raw_queries.rows(), 1);
  auto truth = exact_index::make(items)->search(queries, 10);
  ASSERT_TRUE(truth);
  auto index = graph_index::build(items, {}, {.m = 12, .ef_construction = 80, .l2_items = true});
  ASSERT_TRUE(index) << render(index.error());
  auto found = index->search(queries, 10, {.ef = 100});
  ASSERT_TRUE(found);
  EXPECT_GE(recall_at(*truth, *found), 0.97);
}

TEST(graph_index, one_thread_builds_the_same_graph_from_the_same_seed) {
  auto items = topic_items(2000, 16, 3);
  auto queries = topic_items(50, 16, 4);
  auto a = graph_index::build(items, {}, {.m = 8, .ef_construction = 40, .seed = 7});
  auto b = graph_index::build(items, {}, {.m = 8, .ef_construction = 40, .seed = 7});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a->search(queries, 5, {.ef = 12}), *b->search(queries, 5, {.ef = 12}));
}

TEST(graph_index, a_graph_from_its_parts_answers_as_the_graph_built) {
  auto items = topic_items(1500, 16, 8);
  auto queries = topic_items(40, 16, 9);
  std::vector<uint64_t> ids(1500);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = 1000 + 3 * i;
  for (bool codes : {true, false}) {
    SCOPED_TRACE(codes ? "int8 codes" : "exact scores");
    auto built =
      graph_index::build(items, ids, {.m = 8, .ef_construction = 40, .int8_codes = codes});
    ASSERT_TRUE(built);
    auto loaded = graph_index::from_parts(built->parts());
    ASSERT_TRUE(loaded) << render(loaded.error());
    EXPECT_EQ(loaded->upper_layers(), built->upper_layers());
    EXPECT_EQ(*loaded->search(queries, 10, {.ef = 24}), *built->search(queries, 10, {.ef = 24}));
  }
}

// Table-driven: parts that disagree with one another are refused as a corrupt file, never read
// out of bounds.
TEST(graph_index, parts_that_disagree_are_refused) {
  auto items = topic_items(300, 8, 10);
  auto built = graph_index::build(items, {}, {.m = 4, .ef_construction = 16});
  ASSERT_TRUE(built);
  auto good = built->parts();
  size_t high = 0;
  while (high < good.levels.size() && good.levels[high] == 0)
    ++high;
  ASSERT_LT(high, good.levels.size()) << "some node has an upper layer";
  using mutation = std::function<void(graph_parts&)>;
  struct part_case {
    const char* what;
    mutation mutate;
  } cases[] = {
    {"m below 2", [](graph_parts& p) { p.m = 1; }},
    {"an entry past the items", [](graph_parts& p) { p.entry = 300; }},
    {"ids of another length", [](graph_parts& p) { p.ids.pop_back(); }},
    {"a bottom layer cut short", [](graph_parts& p) { p.bottom.resize(p.bottom.size() - 1); }},
    {"a link past the items", [](graph_parts& p) { p.bottom[1] = 300, p.bottom[0] = 1; }},
    {"a count above the capacity", [](graph_parts& p) { p.bottom[0] = 9; }},
    {"upper layers the levels do not imply", [](graph_parts& p) { p.upper.push_back(0); }},
    {"a level raised with no links for it", [](graph_parts& p) { ++p.levels[0]; }},
    {"an upper link to a node without that level",
     [&](graph_parts& p) {
       // The first upper block belongs to node `high`; link it to a bottom-only node.
       size_t low = high == 0 ? 1 : 0;
       while (p.levels[low] > 0)
         ++low;
       p.upper[0] = 1, p.upper[1] = static_cast<uint32_t>(low);
     }},
    {"codes of another length", [](graph_parts& p) { p.codes.pop_back(); }},
    {"a NaN item", [](graph_parts& p) { p.items(3, 2) = std::nanf(""); }},
  };
  for (auto& c : cases) {
    auto parts = good;
    c.mutate(parts);
    auto loaded = graph_index::from_parts(std::move(parts));
    ASSERT_FALSE(loaded) << c.what;
    EXPECT_EQ(loaded.error().code, errc::corrupt_file) << c.what;
  }
  EXPECT_TRUE(graph_index::from_parts(good));
}

TEST(graph_index, hits_carry_the_ids_given_and_small_sets_are_searched_whole) {
  row_matrix items(3, 2);
  items << 1, 0, 0, 1, 2, 2;
  auto index = graph_index::build(items, {30, 10, 20}, {.m = 2});
  ASSERT_TRUE(index) << render(index.error());
  row_matrix q(1, 2);
  q << 1, 0.1f;
  auto hits = index->search(q, 3, {.ef = 1});
  ASSERT_TRUE(hits) << render(hits.error());
  ASSERT_EQ((*hits)[0].size(), 3u);
  EXPECT_EQ((*hits)[0][0].id, 20u);
  EXPECT_FLOAT_EQ((*hits)[0][0].score, 2.2f);
  EXPECT_EQ((*hits)[0][1].id, 30u);
  EXPECT_EQ((*hits)[0][2].id, 10u);
}

TEST(graph_index, bad_items_options_and_queries_are_refused) {
  row_matrix items = row_matrix::Ones(4, 3);
  row_matrix nan_items = items;
  nan_items(2, 1) = std::nanf("");
  struct build_case {
    const char* what;
    row_matrix items;
    std::vector<uint64_t> ids;
    size_t m;
    errc expected;
  };
  std::vector<build_case> builds{
    {"no items", row_matrix(0, 3), {}, 4, errc::invalid_argument},
    {"a NaN item", nan_items, {}, 4, errc::invalid_argument},
    {"ids of another length", items, {1, 2}, 4, errc::dimension_mismatch},
    {"m below 2", items, {}, 1, errc::invalid_argument},
  };
  for (auto& c : builds) {
    auto index = graph_index::build(c.items, c.ids, {.m = c.m});
    ASSERT_FALSE(index) << c.what;
    EXPECT_EQ(index.error().code, c.expected) << c.what << ": " << render(index.error());
  }
  auto index = graph_index::build(items, {}, {.m = 4});
  ASSERT_TRUE(index);
  row_matrix nan_query = row_matrix::Ones(1, 3);
  nan_query(0, 0) = std::nanf("");
  struct query_case {
    const char* what;
    row_matrix queries;
    size_t k;
    errc expected;
  };
  std::vector<query_case> queries{
    {"k of 0", row_matrix::Ones(1, 3), 0, errc::invalid_argument},
    {"k above the items", row_matrix::Ones(1, 3), 5, errc::invalid_argument},
    {"another dim", row_matrix::Ones(1, 2), 1, errc::dimension_mismatch},
    {"a NaN query", nan_query, 1, errc::invalid_argument},
  };
  for (auto& c : queries) {
    auto hits = index->search(c.queries, c.k, {});
    ASSERT_FALSE(hits) << c.what;
    EXPECT_EQ(hits.error().code, c.expected) << c.what << ": " << render(hits.error());
  }
}

} // namespace
} // namespace darcy::compute::mips
