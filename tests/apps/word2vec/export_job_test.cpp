#include "apps/word2vec/export_job.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "actors/actor_types.hpp"
#include "actors/serving/serving_root.hpp"
#include "runtime/cluster/remote_run.hpp"
#include "stores/serving/serving_export.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::word2vec {
namespace {

constexpr size_t words = 120;
constexpr uint32_t dim = 6;

struct export_test_config : test::test_config {
  export_test_config() { actors::register_actor_types(*this); }
};

word_vectors test_vectors() {
  word_vectors v;
  for (size_t w = 0; w < words; ++w)
    v.words.push_back("w" + std::to_string(w));
  v.vectors = test::gaussian_matrix(words, dim, 21);
  // Lengths that vary a lot: cosine and inner product then rank differently.
  for (Eigen::Index r = 0; r < v.vectors.rows(); ++r)
    v.vectors.row(r) *= static_cast<float>(1 + r % 7);
  return v;
}

/// The k words nearest to `word` by cosine, the word itself first.
std::vector<std::string> by_cosine(const word_vectors& v, size_t word, size_t k) {
  compute::row_matrix unit = v.vectors;
  compute::normalise_rows(unit);
  std::vector<std::pair<float, size_t>> scored;
  for (size_t w = 0; w < words; ++w)
    scored.push_back(
      {-unit.row(static_cast<Eigen::Index>(w)).dot(unit.row(static_cast<Eigen::Index>(word))), w});
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> names;
  for (size_t j = 0; j < k; ++j)
    names.push_back(v.words[scored[j].second]);
  return names;
}

TEST(word2vec_export, a_vectors_file_serves_cosine_neighbours_through_a_root) {
  test::temp_dir tmp{"w2v_export"};
  auto v = test_vectors();
  auto file = tmp.path() + "/v.txt";
  ASSERT_FALSE(write_vectors(v, file, vectors_format::text));
  export_job job;
  job.vectors = file;
  job.out = tmp.path() + "/exports/words";
  job.shards = 3;
  job.index.lists = 4;
  ASSERT_FALSE(run_export(job));
  auto manifest = stores::read_export_manifest(job.out, "");
  ASSERT_TRUE(manifest) << render(manifest.error());
  auto config = stores::read_export_config(job.out, *manifest);
  ASSERT_TRUE(config) << render(config.error());
  EXPECT_EQ(config->kind, "word2vec");
  EXPECT_EQ(config->metric, "cosine");
  EXPECT_EQ(config->items, words);

  export_test_config cfg;
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);
  actors::serving_root_config rc;
  rc.model = "words";
  rc.model_dir = job.out;
  rc.probes = 64; // every list, every item re-ranked: exact
  rc.rerank = words;
  rc.load_newest = false;
  auto root = sys.spawn(actors::serving_root, rc);
  test::stop_on_exit guard{sys, caf::actor_cast<caf::actor>(root)};
  ASSERT_TRUE(runtime::remote_run<std::string>(sys, root, request_context{}, "root",
                                               load_atom::value, request_context{}, std::string{}));
  for (size_t word : {0, 17, 99}) {
    topk_request q;
    q.kind = query_kind::items;
    q.items = {v.words[word]};
    q.k = 5;
    auto r =
      runtime::remote_run<topk_response>(sys, root, request_context{}, "root", topk_atom::value, q);
    ASSERT_TRUE(r) << render(r.error());
    EXPECT_EQ(r->names, by_cosine(v, word, 5)) << v.words[word];
    EXPECT_NEAR(r->scores.front(), 1.0f, 1e-5f);
  }
}

TEST(word2vec_export, bad_sources_are_refused) {
  test::temp_dir tmp{"w2v_export_bad"};
  auto truncated = tmp.path() + "/t.txt";
  {
    std::ofstream out{truncated};
    out << "3 4\na 1 2 3 4\nb 1 2\n";
  }
  struct {
    const char* name;
    std::string checkpoint;
    std::string vectors;
    errc expected;
  } cases[] = {
    {"no source", "", "", errc::invalid_argument},
    {"both sources", tmp.path(), truncated, errc::invalid_argument},
    {"truncated vectors", "", truncated, errc::corrupt_file},
    {"missing vectors", "", tmp.path() + "/none.txt", errc::not_found},
    {"no checkpoint", tmp.path(), "", errc::not_found},
  };
  for (auto& c : cases) {
    export_job job;
    job.checkpoint = c.checkpoint;
    job.vectors = c.vectors;
    job.out = tmp.path() + "/exports/x";
    auto err = run_export(job);
    EXPECT_TRUE(is(err, c.expected)) << c.name << ": " << render(err);
  }
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/exports/x/MANIFEST"));
}

} // namespace
} // namespace darcy::word2vec
