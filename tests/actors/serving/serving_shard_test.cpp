#include "actors/serving/serving_shard.hpp"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "actors/actor_types.hpp"
#include "runtime/cluster/remote_run.hpp"
#include "stores/serving/serving_export.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

constexpr uint32_t shard_dim = 8;

struct shard_test_config : test::test_config {
  shard_test_config() { register_actor_types(*this); }
};

// Each case runs on an export of each index kind, searched wide enough to be exact.
class serving_shard_test : public ::testing::TestWithParam<compute::mips::mips_index_kind> {
protected:
  serving_shard_test() : sys{cfg}, tmp{"serving_shard"} {
    sys.await_actors_before_shutdown(false);
    stores::export_input in;
    in.config.shards = 2;
    in.config.index = GetParam();
    in.items = test::gaussian_matrix(300, shard_dim, 5);
    in.users = test::gaussian_matrix(4, shard_dim, 6);
    in.index = {.lists = 4, .seed = 3};
    auto v = stores::write_export(tmp.path() + "/m", in, 3);
    EXPECT_TRUE(v) << render(v.error());
    items = in.items;
    shard =
      sys.spawn(serving_shard, serving_shard_config{tmp.path() + "/m", "m", "1", 1, 4, 150, 150});
    guard = std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(shard));
  }

  template <class Reply, class Query>
  caf::expected<Reply> ask(const Query& q) {
    return runtime::remote_run<Reply>(sys, shard, request_context{}, "shard", topk_atom::value, q);
  }

  shard_test_config cfg;
  caf::actor_system sys;
  test::temp_dir tmp;
  compute::row_matrix items;
  serving_shard_actor shard;
  std::unique_ptr<test::stop_on_exit> guard;
};

shard_query query(uint64_t seed, uint32_t k = 5) {
  auto m = test::gaussian_matrix(1, shard_dim, seed);
  return {request_context{}, {m.data(), m.data() + shard_dim}, k};
}

TEST_P(serving_shard_test, a_batch_answers_each_query_as_alone_and_refuses_only_the_bad_ones) {
  auto expired = query(11);
  expired.context.deadline_us = now_us() - 1000;
  auto nan = query(12);
  nan.vector[2] = std::nanf("");
  struct {
    const char* name;
    shard_query query;
    std::optional<errc> refused;
  } cases[] = {
    {"good, k 5", query(1), std::nullopt},
    {"past its deadline", expired, errc::deadline_exceeded},
    {"good, k 3", query(2, 3), std::nullopt},
    {"short vector", shard_query{{}, std::vector<float>(shard_dim - 1, 1.0f), 5},
     errc::dimension_mismatch},
    {"NaN", nan, errc::invalid_argument},
    {"k of 0", query(3, 0), errc::invalid_argument},
    {"good, k 5 again", query(4), std::nullopt},
  };
  shard_batch batch;
  for (auto& c : cases)
    batch.queries.push_back(c.query);
  auto got = ask<shard_batch_hits>(batch);
  ASSERT_TRUE(got) << render(got.error());
  ASSERT_EQ(got->answers.size(), std::size(cases));
  ASSERT_EQ(got->errors.size(), std::size(cases));
  EXPECT_EQ(got->shard, 1u);
  for (size_t i = 0; i < std::size(cases); ++i) {
    auto& c = cases[i];
    SCOPED_TRACE(c.name);
    auto alone = ask<shard_hits>(c.query);
    if (c.refused) {
      EXPECT_TRUE(is(got->errors[i], *c.refused)) << render(got->errors[i]);
      EXPECT_TRUE(!alone && is(alone.error(), *c.refused));
      continue;
    }
    ASSERT_FALSE(got->errors[i]) << render(got->errors[i]);
    ASSERT_TRUE(alone) << render(alone.error());
    EXPECT_EQ(got->answers[i].ids, alone->ids);
    EXPECT_EQ(got->answers[i].scores, alone->scores);
    EXPECT_EQ(got->answers[i].ids.size(), c.query.k);
    // Shard 1 holds the odd items.
    std::vector<std::pair<float, uint64_t>> exact;
    for (Eigen::Index r = 1; r < items.rows(); r += 2)
      exact.emplace_back(
        -items.row(r).dot(Eigen::Map<const Eigen::RowVectorXf>(c.query.vector.data(), shard_dim)),
        static_cast<uint64_t>(r));
    std::sort(exact.begin(), exact.end());
    for (size_t j = 0; j < c.query.k; ++j)
      EXPECT_EQ(got->answers[i].ids[j], exact[j].second) << "rank " << j;
  }
  auto status =
    runtime::remote_run<shard_status>(sys, shard, request_context{}, "shard", status_atom::value);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->expired, 2u); // once in the batch, once alone
  EXPECT_EQ(status->answered, 6u);
}

TEST_P(serving_shard_test, an_empty_batch_gets_an_empty_answer) {
  auto got = ask<shard_batch_hits>(shard_batch{});
  ASSERT_TRUE(got) << render(got.error());
  EXPECT_TRUE(got->answers.empty());
  EXPECT_TRUE(got->errors.empty());
}

TEST_P(serving_shard_test, added_items_are_searched_beside_the_export_and_a_resent_add_is_skipped) {
  auto q = query(21, 5);
  auto before = ask<shard_hits>(q);
  ASSERT_TRUE(before) << render(before.error());
  // Item 900 points the query's way with ten times its length: it scores above every item of
  // the export. Item 901 points away and never makes the top 5.
  shard_items added;
  added.ids = {900, 901};
  for (auto x : q.vector)
    added.vectors.push_back(10 * x);
  for (auto x : q.vector)
    added.vectors.push_back(-x);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "added" : "added again");
    auto ok =
      runtime::remote_run<ok_atom>(sys, shard, request_context{}, "shard", add_atom::value, added);
    ASSERT_TRUE(ok) << render(ok.error());
    auto after = ask<shard_hits>(q);
    ASSERT_TRUE(after) << render(after.error());
    ASSERT_EQ(after->ids.size(), 5u);
    EXPECT_EQ(after->ids.front(), 900u);
    // The rest are the export's best four, in order.
    EXPECT_EQ(std::vector<uint64_t>(after->ids.begin() + 1, after->ids.end()),
              std::vector<uint64_t>(before->ids.begin(), before->ids.begin() + 4));
    auto status =
      runtime::remote_run<shard_status>(sys, shard, request_context{}, "shard", status_atom::value);
    ASSERT_TRUE(status);
    EXPECT_EQ(status->items, 150u + 2u);
  }
}

TEST_P(serving_shard_test, an_add_of_another_dimension_or_a_nan_is_refused_and_adds_nothing) {
  shard_items short_rows{{900}, std::vector<float>(shard_dim - 1, 1.0f)};
  shard_items nan{{901}, std::vector<float>(shard_dim, 1.0f)};
  nan.vectors[3] = std::nanf("");
  for (auto [items, code] :
       {std::pair{short_rows, errc::dimension_mismatch}, std::pair{nan, errc::invalid_argument}}) {
    auto r =
      runtime::remote_run<ok_atom>(sys, shard, request_context{}, "shard", add_atom::value, items);
    ASSERT_FALSE(r);
    EXPECT_TRUE(is(r.error(), code)) << render(r.error());
  }
  auto status =
    runtime::remote_run<shard_status>(sys, shard, request_context{}, "shard", status_atom::value);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->items, 150u);
}

INSTANTIATE_TEST_SUITE_P(kinds, serving_shard_test,
                         ::testing::Values(compute::mips::mips_index_kind::ivf_pq,
                                           compute::mips::mips_index_kind::graph),
                         [](const auto& info) {
                           return std::string{compute::mips::to_string(info.param)};
                         });

} // namespace
} // namespace darcy::actors
