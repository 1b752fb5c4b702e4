#include "actors/embedding/embedding_shard.hpp"

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;
using strings = std::vector<std::string>;
using floats = std::vector<float>;

class embedding_shard_test : public test::system_fixture {
protected:
  embedding_shard_test() : shard(sys.spawn(embedding_shard, uint32_t{0})) {
    de_config cfg;
    cfg.name = "words";
    cfg.dim = 2;
    cfg.max_batch = 4;
    cfg.optimizer = {optimizer_kind::sgd, 0.5f};
    EXPECT_TRUE(ask<ok_atom>(sys, shard, test::patience, create_atom::value, cfg));
  }

  caf::expected<floats> lookup(const std::string& name, const strings& keys) {
    return ask<floats>(sys, shard, test::patience, lookup_atom::value, name, keys);
  }

  caf::expected<ok_atom> update(const std::string& name, const strings& keys, const floats& g) {
    return ask<ok_atom>(sys, shard, test::patience, update_atom::value, name, keys, g, int64_t{1});
  }

  embedding_shard_actor shard;
};

TEST_F(embedding_shard_test, UpdateRunsTheOptimizerInsideTheShard) {
  auto before = lookup("words", {"cat", "dog"});
  ASSERT_TRUE(before) << render(before.error());
  ASSERT_EQ(before->size(), 4u);
  ASSERT_TRUE(update("words", {"cat"}, {1.0f, -2.0f}));
  auto after = lookup("words", {"cat", "dog"});
  ASSERT_TRUE(after);
  EXPECT_FLOAT_EQ((*after)[0], (*before)[0] - 0.5f);
  EXPECT_FLOAT_EQ((*after)[1], (*before)[1] + 1.0f);
  EXPECT_EQ((*after)[2], (*before)[2]) << "dog was not updated";
  auto stats =
    ask<embedding_stats>(sys, shard, test::patience, stats_atom::value, std::string{"words"});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->rows, 2u);
}

TEST_F(embedding_shard_test, BadRequestsFailWithAClearErrorAndChangeNothing) {
  auto before = lookup("words", {"cat"});
  ASSERT_TRUE(before);
  struct row {
    const char* name;
    caf::error error;
    errc expected;
  } rows[] = {
    {"unknown_embedding", error_of(lookup("nope", {"cat"})), errc::unknown_embedding},
    {"empty_lookup", error_of(lookup("words", {})), errc::empty_batch},
    {"empty_update", error_of(update("words", {}, {})), errc::empty_batch},
    {"too_large", error_of(lookup("words", {"a", "b", "c", "d", "e"})), errc::batch_too_large},
    {"nan", error_of(update("words", {"cat"}, {NAN, 0})), errc::non_finite},
    {"dim_mismatch", error_of(update("words", {"cat"}, {1, 2, 3})), errc::dimension_mismatch},
  };
  for (auto& r : rows)
    EXPECT_TRUE(is(r.error, r.expected)) << r.name << ": " << render(r.error);
  EXPECT_EQ(*lookup("words", {"cat"}), *before);
  de_config other;
  other.name = "words";
  other.dim = 3;
  auto clash = ask<ok_atom>(sys, shard, test::patience, create_atom::value, other);
  EXPECT_TRUE(is(error_of(clash), errc::invalid_config));
}

TEST_F(embedding_shard_test, an_approximate_top_k_reads_the_index_its_refresher_keeps) {
  de_config cfg;
  cfg.name = "items";
  cfg.dim = 4;
  cfg.max_batch = 4096;
  cfg.ann = {.enabled = true, .refresh_ms = 1};
  ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, create_atom::value, cfg));
  strings keys;
  for (int i = 0; i < 2000; ++i)
    keys.push_back("item-" + std::to_string(i));
  ASSERT_TRUE(lookup("items", keys));
  floats queries{0.5f, -1.0f, 2.0f, 0.1f};
  auto exact =
    ask<top_k_result>(sys, shard, test::patience, top_k_atom::value, std::string{"items"}, queries,
                      uint32_t{5}, top_k_score::inner_product);
  ASSERT_TRUE(exact) << render(exact.error());
  // Every change indexed first (whether or not the refresher got to it), every list read.
  auto whole =
    ask<top_k_result>(sys, shard, test::patience, top_k_atom::value, std::string{"items"}, queries,
                      uint32_t{5}, top_k_score::inner_product, ann_query{100000, 100000, 0});
  ASSERT_TRUE(whole) << render(whole.error());
  EXPECT_EQ(whole->keys, exact->keys);
  EXPECT_EQ(whole->staleness_s, 0.0);
  auto stats =
    ask<embedding_stats>(sys, shard, test::patience, stats_atom::value, std::string{"items"});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->ann_rows, 2000u);
  auto none = ask<top_k_result>(sys, shard, test::patience, top_k_atom::value, std::string{"words"},
                                floats{1, 1}, uint32_t{1}, top_k_score::inner_product, ann_query{});
  EXPECT_TRUE(is(none.error(), errc::invalid_config)) << render(none.error());
}

} // namespace
} // namespace darcy::actors
