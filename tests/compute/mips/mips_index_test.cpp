// Tests compute/mips/mips_index: either kind built and searched through the one call answers as
// the index of that kind does, and kind names parse.
#include "compute/mips/mips_index.hpp"

#include <optional>

#include <gtest/gtest.h>

#include "tests/support/topic_items.hpp"

namespace darcy::compute::mips {
namespace {

TEST(mips_index, each_kind_answers_as_its_own_index) {
  auto items = test::topic_items(1200, 16, 11);
  auto queries = test::topic_items(30, 16, 12);
  mips_index_options o;
  o.ivf_pq = {.lists = 16, .seed = 2};
  o.graph = {.m = 8, .ef_construction = 40};
  mips_search_options s{.probes = 4, .rerank = 40, .ef = 20};
  for (auto kind : {mips_index_kind::ivf_pq, mips_index_kind::graph}) {
    SCOPED_TRACE(to_string(kind));
    o.kind = kind;
    auto index = mips_index::build(items, {}, o);
    ASSERT_TRUE(index) << render(index.error());
    EXPECT_EQ(index->kind(), kind);
    EXPECT_EQ(index->size(), 1200u);
    EXPECT_EQ(index->dim(), 16u);
    EXPECT_EQ(index->graph() != nullptr, kind == mips_index_kind::graph);
    EXPECT_EQ(index->ivf_pq() != nullptr, kind == mips_index_kind::ivf_pq);
    auto got = index->search(queries, 10, s);
    ASSERT_TRUE(got);
    if (kind == mips_index_kind::graph) {
      auto own = graph_index::build(items, {}, o.graph)->search(queries, 10, {.ef = 20});
      EXPECT_EQ(*got, *own);
    } else {
      auto own =
        ivf_pq_index::build(items, {}, o.ivf_pq)->search(queries, 10, {.probes = 4, .rerank = 40});
      EXPECT_EQ(*got, *own);
    }
  }
}

TEST(mips_index, kind_names_parse_and_unknown_ones_are_refused) {
  struct name_case {
    const char* name;
    std::optional<mips_index_kind> kind;
  } cases[] = {
    {"ivf_pq", mips_index_kind::ivf_pq},
    {"ivf-pq", mips_index_kind::ivf_pq},
    {"graph", mips_index_kind::graph},
    {"hnsw", std::nullopt},
    {"", std::nullopt},
  };
  for (auto& c : cases) {
    auto kind = parse_mips_index_kind(c.name);
    if (c.kind) {
      ASSERT_TRUE(kind) << c.name;
      EXPECT_EQ(*kind, *c.kind);
      EXPECT_EQ(parse_mips_index_kind(to_string(*kind)).value(), *c.kind);
    } else {
      ASSERT_FALSE(kind) << c.name;
      EXPECT_EQ(kind.error().code, errc::invalid_argument);
    }
  }
}

} // namespace
} // namespace darcy::compute::mips
