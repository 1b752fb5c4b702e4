#include "stores/serving/serving_export.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "compute/mips/exact_index.hpp"
#include "messages/error.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

using compute::row_matrix;
namespace fs = std::filesystem;

using test::gaussian_matrix;

using compute::mips::mips_index_kind;

export_input small_input(uint32_t shards, mips_index_kind kind = mips_index_kind::ivf_pq) {
  export_input in;
  in.config.shards = shards;
  in.config.index = kind;
  in.config.lambda = 0.1;
  in.config.sigma = 0.5;
  in.config.alpha = 2;
  in.items = gaussian_matrix(2000, 8, 1);
  in.users = gaussian_matrix(50, 8, 2);
  for (int u = 0; u < 50; ++u)
    in.user_names.push_back("user-" + std::to_string(u));
  in.index = {.lists = 8, .seed = 3};
  return in;
}

class serving_export_kinds : public ::testing::TestWithParam<mips_index_kind> {};

TEST_P(serving_export_kinds, shards_merged_answer_as_exact_search_over_all_items) {
  test::temp_dir tmp{"export_roundtrip"};
  auto model = tmp.path() + "/m";
  auto version = write_export(model, small_input(3, GetParam()), 2);
  ASSERT_TRUE(version) << render(version.error());
  EXPECT_EQ(*version, "1");
  auto m = read_export_manifest(model);
  ASSERT_TRUE(m) << render(m.error());
  EXPECT_EQ(m->checkpoint, "1");
  auto root = load_export_root(model, *m);
  ASSERT_TRUE(root) << render(root.error());
  auto in = small_input(3);
  EXPECT_EQ(root->config.index, GetParam());
  EXPECT_EQ(root->config.items, 2000u);
  EXPECT_EQ(root->config.users, 50u);
  EXPECT_EQ(root->config.dim, 8u);
  EXPECT_DOUBLE_EQ(root->config.alpha, 2.0);
  EXPECT_EQ(root->user_names, in.user_names);
  EXPECT_TRUE(root->item_names.empty());
  EXPECT_TRUE(root->gramian.isApprox(in.items.transpose() * in.items, 1e-5f));
  EXPECT_EQ(root->items.to_vector(),
            std::vector<float>(in.items.data(), in.items.data() + in.items.size()));
  auto queries = gaussian_matrix(5, 8, 4);
  std::vector<std::vector<std::vector<compute::hit>>> per_shard;
  for (uint32_t s = 0; s < 3; ++s) {
    auto shard = load_export_shard(model, *m, s);
    ASSERT_TRUE(shard) << render(shard.error());
    EXPECT_EQ(shard->size(), s == 0 ? 667u : 667u - (s == 2));
    EXPECT_EQ(shard->kind(), GetParam());
    auto hits = shard->search(queries, 7, {.probes = 8, .rerank = 1000, .ef = 667});
    ASSERT_TRUE(hits);
    per_shard.push_back(std::move(*hits));
  }
  auto truth = compute::mips::exact_index::make(in.items)->search(queries, 7);
  for (size_t q = 0; q < 5; ++q) {
    auto merged = compute::merge_top_k({per_shard[0][q], per_shard[1][q], per_shard[2][q]}, 7);
    for (size_t i = 0; i < 7; ++i)
      EXPECT_EQ(merged[i].id, (*truth)[q][i].id) << "query " << q << " rank " << i;
  }
  auto missing = load_export_shard(model, *m, 3);
  ASSERT_FALSE(missing);
  EXPECT_TRUE(is(missing.error(), errc::invalid_argument));
}

INSTANTIATE_TEST_SUITE_P(kinds, serving_export_kinds,
                         ::testing::Values(mips_index_kind::ivf_pq, mips_index_kind::graph),
                         [](const auto& info) { return std::string{to_string(info.param)}; });

TEST(serving_export, keeps_the_newest_versions_and_reads_any_kept_one) {
  test::temp_dir tmp{"export_versions"};
  auto model = tmp.path() + "/m";
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(write_export(model, small_input(1), 2));
  EXPECT_EQ(export_versions(model), (std::vector<std::string>{"3", "2"}));
  EXPECT_EQ(read_export_manifest(model)->checkpoint, "3");
  EXPECT_TRUE(read_export_manifest(model, "2"));
  EXPECT_FALSE(read_export_manifest(model, "1"));
}

TEST(serving_export, an_interrupted_export_leaves_the_previous_version_servable) {
  test::temp_dir tmp{"export_crash"};
  auto model = tmp.path() + "/m";
  ASSERT_TRUE(write_export(model, small_input(2), 3));
  // What a kill during the next export leaves: its directory with some parts, no manifest.
  fs::create_directories(model + "/2/shard-0");
  std::ofstream{model + "/2/shard-0/codes.u8"} << "partial";
  auto m = read_export_manifest(model);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->checkpoint, "1");
  EXPECT_TRUE(load_export_root(model, *m));
  EXPECT_TRUE(load_export_shard(model, *m, 1));
  // The next export takes a fresh number and still becomes the newest.
  auto next = write_export(model, small_input(2), 3);
  ASSERT_TRUE(next);
  EXPECT_EQ(*next, "3");
  EXPECT_EQ(read_export_manifest(model)->checkpoint, "3");
}

TEST(serving_export, damaged_files_are_refused_on_load) {
  struct damage_case {
    std::string file;
    bool truncate;
    mips_index_kind kind = mips_index_kind::ivf_pq;
  };
  for (auto& x : {damage_case{"shard-0/codes.u8", false}, damage_case{"shard-1/items.f32", true},
                  damage_case{"root/items.f32", false}, damage_case{"root/config.toml", true},
                  damage_case{"shard-1/bottom.u32", false, mips_index_kind::graph},
                  damage_case{"shard-0/upper.u32", true, mips_index_kind::graph}}) {
    test::temp_dir tmp{"export_damage"};
    auto model = tmp.path() + "/m";
    ASSERT_TRUE(write_export(model, small_input(2, x.kind), 1));
    auto path = model + "/1/" + x.file;
    if (x.truncate) {
      fs::resize_file(path, fs::file_size(path) / 2);
    } else {
      std::fstream f{path, std::ios::in | std::ios::out | std::ios::binary};
      f.seekp(3);
      f.put('\x7f');
    }
    auto m = read_export_manifest(model);
    ASSERT_TRUE(m);
    bool root = x.file.rfind("root/", 0) == 0;
    auto err = root ? load_export_root(model, *m).error()
                    : load_export_shard(model, *m, x.file[6] - '0').error();
    EXPECT_TRUE(is(err, errc::corrupt_file)) << x.file << ": " << render(err);
  }
}

TEST(serving_export, keeps_features_and_counts_the_users_in_the_gramian) {
  test::temp_dir tmp{"export_features"};
  auto in = small_input(2);
  in.config.feature_value = 0.5;
  in.user_features = gaussian_matrix(3, 8, 5);
  in.user_feature_names = {"age:30", "country:fr", "friend:7"};
  in.item_features = gaussian_matrix(2, 8, 6);
  in.item_feature_names = {"rock", "pop"};
  row_matrix expected = in.items.transpose() * in.items;
  expected += in.user_features.transpose() * in.user_features;
  auto user_features = in.user_features;
  auto item_features = in.item_features;
  auto version = write_export(tmp.path() + "/m", std::move(in), 1);
  ASSERT_TRUE(version) << render(version.error());
  auto manifest = read_export_manifest(tmp.path() + "/m");
  ASSERT_TRUE(manifest) << render(manifest.error());
  auto root = load_export_root(tmp.path() + "/m", *manifest);
  ASSERT_TRUE(root) << render(root.error());
  EXPECT_EQ(root->config.user_features, 3u);
  EXPECT_EQ(root->config.item_features, 2u);
  EXPECT_EQ(root->config.feature_value, 0.5);
  EXPECT_EQ(root->user_feature_names,
            (std::vector<std::string>{"age:30", "country:fr", "friend:7"}));
  EXPECT_EQ(root->item_feature_names, (std::vector<std::string>{"rock", "pop"}));
  ASSERT_EQ(root->user_features.size(), 3u * 8);
  ASSERT_EQ(root->item_features.size(), 2u * 8);
  EXPECT_EQ(std::memcmp(root->user_features.data(), user_features.data(), 3 * 8 * sizeof(float)),
            0);
  EXPECT_EQ(std::memcmp(root->item_features.data(), item_features.data(), 2 * 8 * sizeof(float)),
            0);
  EXPECT_TRUE(root->gramian.isApprox(expected, 1e-5f));
}

TEST(serving_export, an_export_without_features_has_no_feature_parts) {
  test::temp_dir tmp{"export_no_features"};
  ASSERT_TRUE(write_export(tmp.path() + "/m", small_input(1), 1));
  auto manifest = read_export_manifest(tmp.path() + "/m");
  ASSERT_TRUE(manifest);
  for (auto& part : manifest->parts)
    EXPECT_EQ(part.path.find("feature"), std::string::npos) << part.path;
  auto root = load_export_root(tmp.path() + "/m", *manifest);
  ASSERT_TRUE(root) << render(root.error());
  EXPECT_EQ(root->config.user_features, 0u);
  EXPECT_TRUE(root->user_feature_names.empty());
  EXPECT_EQ(root->user_features.size(), 0u);
}

TEST(serving_export, refuses_bad_input_before_writing_anything) {
  using mutation = void (*)(export_input&);
  for (auto mutate : std::initializer_list<mutation>{
         [](export_input& in) { in.config.shards = 0; },
         [](export_input& in) { in.config.shards = 2001; },
         [](export_input& in) { in.items(5, 3) = NAN; },
         [](export_input& in) { in.user_names.pop_back(); },
         [](export_input& in) {
           in.item_names = {"a", "b"};
         },
         [](export_input& in) { in.config.metric = "l1"; },
         [](export_input& in) { in.index.exact_last_dim = true; },
         [](export_input& in) { in.users = gaussian_matrix(3, 4, 1); },
         [](export_input& in) { in.user_features = gaussian_matrix(2, 8, 4); },
         [](export_input& in) {
           in.item_features = gaussian_matrix(2, 8, 4);
           in.item_feature_names = {"rock", "rock"};
         },
         [](export_input& in) {
           in.user_features = gaussian_matrix(1, 4, 4);
           in.user_feature_names = {"age:30"};
         },
         [](export_input& in) {
           in.user_features = gaussian_matrix(1, 8, 4);
           in.user_features(0, 2) = INFINITY;
           in.user_feature_names = {"age:30"};
         }}) {
    test::temp_dir tmp{"export_bad"};
    auto in = small_input(2);
    mutate(in);
    auto version = write_export(tmp.path() + "/m", std::move(in), 1);
    ASSERT_FALSE(version);
    EXPECT_TRUE(is(version.error(), errc::invalid_argument)) << render(version.error());
    EXPECT_FALSE(fs::exists(tmp.path() + "/m/1"));
  }
}

} // namespace
} // namespace darcy::stores
