#include "apps/wals/wals_jobs.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "apps/wals/export_job.hpp"
#include "messages/error.hpp"
#include "stores/serving/serving_export.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::wals {
namespace {

constexpr int users = 400;
constexpr int genres = 60;
constexpr int items = 10 * genres;

/// A sparse matrix whose items have informative features: item i is of genre i % genres, user
/// u likes genre u % genres and took 4 of its 10 items and 1 at random, so that most items
/// have few users. The items' genres go to `genres_file` ("item<TAB>genre"), the users' own
/// genre to `tastes_file`.
void write_genre_set(const std::string& matrix_file, const std::string& genres_file,
                     const std::string& tastes_file) {
  std::mt19937_64 rng{7};
  std::ofstream m{matrix_file}, g{genres_file}, t{tastes_file};
  std::vector<int> of_genre(items / genres);
  std::uniform_int_distribution<int> any{0, items - 1};
  for (int u = 0; u < users; ++u) {
    auto genre = u % genres;
    std::iota(of_genre.begin(), of_genre.end(), 0);
    std::shuffle(of_genre.begin(), of_genre.end(), rng);
    for (int j = 0; j < 4; ++j)
      m << "u" << u << "\ti" << genre + genres * of_genre[j] << "\t1\n";
    m << "u" << u << "\ti" << any(rng) << "\t1\n";
    t << "u" << u << "\tgenre" << genre << "\n";
  }
  for (int i = 0; i < items; ++i)
    g << "i" << i << "\tgenre" << i % genres << "\n";
}

train_job genre_job(const std::string& matrix_file) {
  train_job job;
  job.quiet = true;
  auto& o = job.options;
  o.data.format = "tsv";
  o.data.path = matrix_file;
  o.data.holdout = 0.2f;
  o.data.holdout_seed = 3;
  o.params.dim = 16;
  o.params.alpha = 10;
  o.params.weight_fn = wals_weight_fn::identity;
  o.params.lambda = 1;
  o.params.sigma = 0.1f;
  o.params.seed = 1;
  o.sweeps = 8;
  return job;
}

TEST(wals_jobs, InformativeItemFeaturesLiftHeldOutPrecision) {
  test::temp_dir tmp{"wals_genres"};
  auto matrix = tmp.path() + "/m.tsv", genre_file = tmp.path() + "/genres.tsv",
       tastes = tmp.path() + "/tastes.tsv";
  write_genre_set(matrix, genre_file, tastes);
  auto plain = evaluate(genre_job(matrix), 10);
  ASSERT_TRUE(plain) << render(plain.error());
  auto with_features = genre_job(matrix);
  with_features.options.data.col_features = genre_file;
  auto featured = evaluate(with_features, 10);
  ASSERT_TRUE(featured) << render(featured.error());
  RecordProperty("p_at_10_without_features", std::to_string(plain->wals.precision));
  RecordProperty("p_at_10_with_features", std::to_string(featured->wals.precision));
  std::printf("held-out P@10: %.4f without the items' genres, %.4f with them (popularity %.4f)\n",
              plain->wals.precision, featured->wals.precision, plain->popularity.precision);
  // Both are scored on the same held-out entries of the same users. On 2026-12-04 the genres
  // lifted P@10 from 0.048 to 0.077 (`darcy wals eval` on the same set).
  EXPECT_EQ(plain->wals.rows, featured->wals.rows);
  EXPECT_GT(featured->wals.precision, plain->wals.precision + 0.01);
}

TEST(wals_jobs, AModelTrainedWithFeaturesExportsThemByName) {
  test::temp_dir tmp{"wals_feature_export"};
  auto matrix = tmp.path() + "/m.tsv", genre_file = tmp.path() + "/genres.tsv",
       tastes = tmp.path() + "/tastes.tsv";
  write_genre_set(matrix, genre_file, tastes);
  auto job = genre_job(matrix);
  job.options.data.holdout = 0;
  job.options.data.col_features = genre_file;
  job.options.data.row_features = tastes;
  job.options.data.feature_value = 0.5f;
  job.options.sweeps = 2;
  job.out = tmp.path() + "/model";
  auto trained = train(job);
  ASSERT_TRUE(trained) << render(trained.error());
  export_job e;
  e.model = job.out;
  e.out = tmp.path() + "/exports/songs";
  e.shards = 2;
  e.index.lists = 4;
  ASSERT_FALSE(run_export(e));
  auto manifest = stores::read_export_manifest(e.out);
  ASSERT_TRUE(manifest) << render(manifest.error());
  auto root = stores::load_export_root(e.out, *manifest);
  ASSERT_TRUE(root) << render(root.error());
  auto& c = root->config;
  auto& data = *trained->data;
  EXPECT_EQ(c.items, data.items);
  EXPECT_EQ(c.users, data.users);
  EXPECT_EQ(c.feature_value, 0.5);
  // The users' tastes were columns, the items' genres rows: both kinds of feature, by name.
  ASSERT_EQ(c.user_features, uint64_t{genres});
  ASSERT_EQ(c.item_features, uint64_t{genres});
  EXPECT_EQ(root->user_feature_names.front(), "genre0");
  EXPECT_EQ(root->item_feature_names.front(), "genre0");
  auto& v = trained->result.v;
  auto& u = trained->result.u;
  for (uint32_t d = 0; d < c.dim; ++d) {
    EXPECT_EQ(root->user_features.data()[d], v.values[c.items * c.dim + d]);
    EXPECT_EQ(root->item_features.data()[d], u.values[c.users * c.dim + d]);
  }
}

} // namespace
} // namespace darcy::wals
