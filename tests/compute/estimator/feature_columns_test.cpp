#include "compute/estimator/feature_columns.hpp"

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/gradient_check.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::compute::estimator {
namespace {

using mat = nn::matrix_t<double>;
using rows_of_ids = std::vector<std::vector<uint64_t>>;

feature_map batch() {
  feature_map f;
  f["color"] = feature_value::categorical({{"red"}, {"blue", "red"}, {}, {"mauve"}});
  f["size"] = feature_value::categorical({{"s"}, {"l"}, {"m"}, {"s"}});
  f["age"] = feature_value::numeric({-1, 0, 5, 10});
  f["xy"] = feature_value::numeric({1, 20, 3, -4, 5, 6, 7, 8}, 2);
  return f;
}

TEST(feature_columns, categorical_columns_give_the_expected_bucket_ids) {
  test::temp_dir dir{"vocab"};
  auto path = dir.path() + "/colors.txt";
  std::ofstream{path} << "blue\r\nred\n\ngreen\n";
  auto color_list = *categorical_column_with_vocabulary_list("color", {"red", "blue", "green"});
  struct {
    const char* what;
    categorical_ptr column;
    uint64_t buckets;
    rows_of_ids expected;
  } cases[] = {
    {"vocabulary list, unknown words dropped", color_list, 3, {{0}, {1, 0}, {}, {}}},
    {"vocabulary file (CRLF, blank lines)",
     *categorical_column_with_vocabulary_file("color", path),
     3,
     {{1}, {0, 1}, {}, {}}},
    {"bucketized", *bucketized_column("age", {0, 10}), 3, {{0}, {1}, {1}, {2}}},
    {"bucketized, width 2",
     *bucketized_column("xy", {0, 10}, 2),
     6,
     {{1, 5}, {1, 3}, {1, 4}, {1, 4}}},
  };
  auto f = batch();
  for (auto& c : cases) {
    ASSERT_TRUE(c.column) << c.what;
    EXPECT_EQ(c.column->buckets(), c.buckets) << c.what;
    auto ids = c.column->ids(f);
    ASSERT_TRUE(ids) << c.what << ": " << render(ids.error());
    EXPECT_EQ(ids->rows, c.expected) << c.what;
  }
}

TEST(feature_columns, hashed_and_crossed_ids_are_deterministic_and_in_range) {
  auto f = batch();
  auto color = *categorical_column_with_hash_bucket("color", 7);
  auto with_oov = *categorical_column_with_vocabulary_list("color", {"red", "blue"}, 3);
  auto size = *categorical_column_with_vocabulary_list("size", {"s", "m", "l"});
  auto cross = *crossed_column({with_oov, size}, 1000);
  auto reversed = *crossed_column({size, with_oov}, 1000);
  EXPECT_EQ(cross->name(), "color_X_size");
  auto hashed = color->ids(f), oov = with_oov->ids(f), crossed = cross->ids(f),
       crossed_again = cross->ids(f), other_order = reversed->ids(f);
  ASSERT_TRUE(hashed && oov && crossed && crossed_again && other_order);
  EXPECT_EQ(hashed->rows[0][0], hashed->rows[1][1]) << "red hashes to one bucket";
  for (auto& row : hashed->rows)
    for (auto id : row)
      EXPECT_LT(id, 7u);
  EXPECT_GE(oov->rows[3][0], 2u) << "mauve lands in an out-of-vocabulary bucket";
  EXPECT_LT(oov->rows[3][0], 5u);
  // Row 1 crosses {blue, red} with {l}: two ids; row 2 has no color: none.
  EXPECT_EQ(crossed->rows[1].size(), 2u);
  EXPECT_TRUE(crossed->rows[2].empty());
  EXPECT_EQ(crossed->rows, crossed_again->rows);
  EXPECT_NE(crossed->rows[0], other_order->rows[0]) << "the order of the crossed columns counts";
  EXPECT_NE(crossed->rows[0][0], crossed->rows[3][0]) << "red×s and mauve×s differ";
}

TEST(feature_columns, an_aligned_cross_pairs_the_ith_ids_and_round_trips_through_its_spec) {
  feature_map f;
  f["words"] = feature_value::categorical({{"the", "cat", "sat"}, {"the"}, {}});
  f["next"] = feature_value::categorical({{"cat", "sat", "</s>"}, {"</s>"}, {}});
  auto words = *categorical_column_with_hash_bucket("words", 1000);
  auto next = *categorical_column_with_hash_bucket("next", 1000);
  auto bigrams = *crossed_column({words, next}, 1 << 20, cross_kind::aligned);
  auto pairs = *crossed_column({words, next}, 1 << 20);
  auto ids = bigrams->ids(f);
  ASSERT_TRUE(ids) << render(ids.error());
  EXPECT_EQ(ids->rows[0].size(), 3u) << "one id per bigram, not 3 × 3";
  EXPECT_EQ(pairs->ids(f)->rows[0].size(), 9u);
  EXPECT_TRUE(ids->rows[2].empty());
  // "the cat" in row 0 and "the </s>" in row 1 share their first word but not the bigram.
  EXPECT_NE(ids->rows[0][0], ids->rows[1][0]);
  auto rebuilt = categorical_from_spec(bigrams->spec());
  ASSERT_TRUE(rebuilt) << render(rebuilt.error());
  EXPECT_EQ((*rebuilt)->ids(f)->rows, ids->rows);

  f["next"] = feature_value::categorical({{"cat", "sat"}, {"</s>"}, {}});
  auto misaligned = bigrams->ids(f);
  ASSERT_FALSE(misaligned);
  EXPECT_TRUE(is(misaligned.error(), errc::invalid_argument)) << render(misaligned.error());
}

TEST(feature_columns, dense_columns_and_the_input_layer) {
  auto f = batch();
  auto color = *categorical_column_with_vocabulary_list("color", {"red", "blue"}, 1);
  auto age = *numeric_column<double>("age", 1, 5, 5);
  auto one_hot = indicator_column<double>(color);
  auto mean = *embedding_column<double>(color, 3, combiner::mean, 4);
  auto sum = *embedding_column<double>(color, 3, combiner::sum, 4);
  auto sqrtn = *embedding_column<double>(color, 3, combiner::sqrtn, 4);
  input_layer<double> in{{age, one_hot, mean, sum, sqrtn}};
  EXPECT_EQ(in.width(), 1u + 3 + 3 * 3);
  auto x = in.forward(f);
  ASSERT_TRUE(x) << render(x.error());
  ASSERT_EQ(x->rows(), 4);
  EXPECT_EQ(x->col(0), (Eigen::Vector4d{-1.2, -1, 0, 1}));
  EXPECT_EQ(x->block(0, 1, 4, 3), (mat{{1, 0, 0}, {1, 1, 0}, {0, 0, 0}, {0, 0, 1}}));
  mat table = mean->parameters().front()->value; // the same seed: the same table for all three
  EXPECT_TRUE(x->block(1, 4, 1, 3).isApprox((table.row(0) + table.row(1)) / 2));
  EXPECT_TRUE(x->block(1, 7, 1, 3).isApprox(table.row(0) + table.row(1)));
  EXPECT_TRUE(x->block(1, 10, 1, 3).isApprox((table.row(0) + table.row(1)) / std::sqrt(2.0)));
  EXPECT_TRUE(x->block(2, 4, 1, 9).isZero()) << "a row without ids embeds to zeros";
}

TEST(feature_columns, embedding_gradients_match_finite_differences_and_shared_tables_are_one) {
  auto f = batch();
  auto color = *categorical_column_with_vocabulary_list("color", {"red", "blue"}, 1);
  auto size = *categorical_column_with_vocabulary_list("size", {"s", "m", "l"});
  auto shared = *shared_embedding_columns<double>({color, size}, 2, combiner::sqrtn, 2);
  input_layer<double> in{{shared[0], shared[1]}};
  ASSERT_EQ(in.parameters().size(), 1u) << "one table behind both columns";
  auto& table = *in.parameters().front();
  mat weights = mat::Random(4, in.width());
  auto loss = [&] { return in.forward(f)->cwiseProduct(weights).sum(); };
  table.zero_grad();
  ASSERT_TRUE(in.forward(f));
  in.backward(weights);
  mat analytic = table.grad;
  test::expect_gradient("shared embedding table", table.value, analytic, loss);
}

TEST(feature_columns, bad_specs_and_features_are_refused_with_clear_errors) {
  test::temp_dir dir{"vocab_errors"};
  std::ofstream{dir.path() + "/empty.txt"} << "\n";
  auto color = *categorical_column_with_hash_bucket("color", 5);
  auto big = *categorical_column_with_hash_bucket("size", 6);
  struct {
    const char* what;
    plain_error error;
    errc expected;
  } specs[] = {
    {"a bucket count of 0", categorical_column_with_hash_bucket("color", 0).error(),
     errc::invalid_config},
    {"an empty vocabulary", categorical_column_with_vocabulary_list("color", {}).error(),
     errc::invalid_config},
    {"an empty vocabulary file",
     categorical_column_with_vocabulary_file("color", dir.path() + "/empty.txt").error(),
     errc::invalid_config},
    {"a missing vocabulary file",
     categorical_column_with_vocabulary_file("color", dir.path() + "/none.txt").error(),
     errc::not_found},
    {"a repeated word", categorical_column_with_vocabulary_list("color", {"a", "a"}).error(),
     errc::invalid_config},
    {"decreasing boundaries", bucketized_column("age", {3, 1}).error(), errc::invalid_config},
    {"a cross of one column", crossed_column({color}, 10).error(), errc::invalid_config},
    {"numeric width 0", numeric_column<double>("age", 0).error(), errc::invalid_config},
    {"scale 0", numeric_column<double>("age", 1, 0, 0).error(), errc::invalid_config},
    {"dimension 0", embedding_column<double>(color, 0).error(), errc::invalid_config},
    {"shared tables of different sizes", shared_embedding_columns<double>({color, big}, 2).error(),
     errc::invalid_config},
  };
  for (auto& s : specs)
    EXPECT_TRUE(is(s.error, s.expected)) << s.what << ": " << render(s.error);

  auto f = batch();
  f["nan"] = feature_value::numeric({1, NAN, 2, 3});
  f["short"] = feature_value::numeric({1, 2});
  struct {
    const char* what;
    std::vector<dense_ptr<double>> columns;
  } batches[] = {
    {"an unknown key", {*numeric_column<double>("height")}},
    {"numbers for a categorical column",
     {indicator_column<double>(*categorical_column_with_hash_bucket("age", 3))}},
    {"strings for a numeric column", {*numeric_column<double>("color")}},
    {"the wrong numeric width", {*numeric_column<double>("xy", 3)}},
    {"a NaN value", {*numeric_column<double>("nan")}},
    {"row counts that differ", {*numeric_column<double>("age"), *numeric_column<double>("short")}},
  };
  for (auto& b : batches) {
    input_layer<double> in{b.columns};
    auto x = in.forward(f);
    ASSERT_FALSE(x) << b.what;
    EXPECT_TRUE(is(x.error(), errc::invalid_argument)) << b.what << ": " << render(x.error());
  }
}

} // namespace
} // namespace darcy::compute::estimator
