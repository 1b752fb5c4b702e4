// `darcy word2vec` as a user runs it: bad input ends the process with one clear error line
// and exit code 1, never a crash.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/testing/redis_server.hpp"
#include "stores/embedding/redis_store.hpp"
#include "tests/integration/node_process.hpp"

namespace darcy::test {
namespace {

TEST(word2vec_cli, bad_input_is_one_clear_error_line) {
  auto empty = write_temp_file("w2v-empty.txt", "");
  auto garbage = write_temp_file("w2v-garbage.bin", std::string("\x7f"
                                                                "ELF\x02\x01\x01\x00\x00\x00",
                                                                10));
  auto bad_utf8 = write_temp_file("w2v-bad-utf8.txt", "good words\nbad \xFF\xFE here\n");
  auto corpus = write_temp_file("w2v-ok.txt", "a b c d e f\nb c d e f a\n");
  auto lying = write_temp_file("w2v-lying.txt", "100000000 100\nthe 1\n");
  struct bad_case {
    const char* what;
    std::vector<std::string> args;
    const char* mentions;
  };
  std::vector<bad_case> cases{
    {"empty corpus", {"word2vec", "train", "--corpus", empty, "--quiet"}, "no words"},
    {"binary garbage", {"word2vec", "train", "--corpus", garbage, "--quiet"}, "binary data"},
    {"invalid UTF-8", {"word2vec", "train", "--corpus", bad_utf8, "--quiet"}, ":2: invalid UTF-8"},
    {"missing corpus",
     {"word2vec", "train", "--corpus", "/nonexistent/corpus", "--quiet"},
     "does not exist"},
    {"missing eval file",
     {"word2vec", "train", "--corpus", corpus, "--quiet", "--epochs", "1", "--similarity",
      "/nonexistent/wordsim.tsv"},
     "evaluation file /nonexistent/wordsim.tsv does not exist"},
    {"cluster that does not answer",
     {"word2vec", "train", "--corpus", corpus, "--quiet", "--cluster", "127.0.0.1:1",
      "--timeout-ms", "2000"},
     "does not answer"},
    {"missing vectors file",
     {"word2vec", "eval", "--vectors", "/nonexistent/v.bin", "--similarity", corpus},
     "does not exist"},
    // Issue 12, item 1: a header that promises more than the file holds is refused before
    // anything is allocated.
    {"vectors header that lies, eval",
     {"word2vec", "eval", "--vectors", lying, "--similarity", corpus},
     "the header promises 100000000 vectors of dim 100"},
    {"vectors header that lies, neighbors",
     {"word2vec", "neighbors", "the", "--vectors", lying},
     "the header promises 100000000 vectors of dim 100"},
    // Issue 12, item 2: limits are named instead of aborting.
    {"too many threads",
     {"word2vec", "train", "--corpus", corpus, "--quiet", "--threads", "100000"},
     "--threads 100000 is over the limit of"},
    {"too large a dim",
     {"word2vec", "train", "--corpus", corpus, "--quiet", "--dim", "10000000"},
     "--dim 10000000 is over the limit of 65536"},
    {"too many shards",
     {"word2vec", "train", "--corpus", corpus, "--quiet", "--shards", "100000"},
     "--shards 100000 is over the limit of 1024"},
    // Issue 12, item 5: a checkpoint or output place that cannot be written is refused before
    // training (a regular file stands where a directory must go, which stops root too).
    {"unwritable checkpoint",
     {"word2vec", "train", "--corpus", corpus, "--quiet", "--checkpoint", corpus + "/ckpt"},
     "--checkpoint: cannot create directory"},
    {"unwritable output",
     {"word2vec", "train", "--corpus", corpus, "--quiet", "--output", corpus + "/v.txt"},
     "--output: cannot create directory"},
  };
  for (auto& c : cases) {
    auto r = run_darcy(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("darcy: error: ", 0), 0u) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.mentions), std::string::npos) << c.what << ": " << r.err;
  }
}

TEST(word2vec_cli, trains_writes_vectors_and_answers_neighbours_from_its_checkpoint) {
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += i % 2 ? "red green blue red green blue\n" : "one two three one two three\n";
  auto corpus = write_temp_file("w2v-colors.txt", text);
  auto vectors = corpus + ".vec";
  auto checkpoint = corpus + ".ckpt";
  auto r = run_darcy({"word2vec", "train", "--corpus", corpus, "--quiet", "--dim", "8", "--epochs",
                      "5", "--sample", "0", "--output", vectors, "--checkpoint", checkpoint});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("6 word vectors"), std::string::npos) << r.out;
  auto near = run_darcy({"word2vec", "neighbors", "red", "-k", "2", "--checkpoint", checkpoint});
  ASSERT_EQ(near.exit_code, 0) << near.err;
  EXPECT_NE(near.out.find("green"), std::string::npos) << near.out;
  EXPECT_NE(near.out.find("blue"), std::string::npos) << near.out;
  auto from_file = run_darcy({"word2vec", "neighbors", "red", "-k", "2", "--vectors", vectors});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_NE(from_file.out.find("green"), std::string::npos) << from_file.out;
  // Both sources export the same words for serving; a table the checkpoint lacks is refused.
  for (auto source : {"--vectors", "--checkpoint"}) {
    auto exported = run_darcy({"word2vec", "export", source,
                               std::string{source} == "--vectors" ? vectors : checkpoint, "--out",
                               corpus + ".exports/colors", "--shards", "2"});
    ASSERT_EQ(exported.exit_code, 0) << source << ": " << exported.err;
    EXPECT_NE(exported.out.find("(2 shards, 6 words, cosine)"), std::string::npos) << exported.out;
  }
  auto no_table = run_darcy({"word2vec", "export", "--checkpoint", checkpoint, "--name", "nope",
                             "--out", corpus + ".exports/colors"});
  EXPECT_EQ(no_table.exit_code, 1);
  EXPECT_NE(no_table.err.find("has no embedding nope.in"), std::string::npos) << no_table.err;
  for (auto source : {"--vectors", "--checkpoint"}) {
    auto unknown = run_darcy({"word2vec", "neighbors", "purple", source,
                              std::string{source} == "--vectors" ? vectors : checkpoint});
    EXPECT_EQ(unknown.exit_code, 1) << source;
    EXPECT_NE(unknown.err.find("'purple' is not in the model"), std::string::npos)
      << source << ": " << unknown.err;
  }
}

/// Trains the same small corpus twice with two shards, its rows in memory and then with
/// `--store store`, and returns the second run's vector file after checking that the two
/// files are equal: the backend changes nothing.
std::string vectors_with_store(const std::string& name, const std::string& store) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += i % 2 ? "red green blue red green blue\n" : "one two three one two three\n";
  auto corpus = write_temp_file(name, text);
  std::vector<std::string> common{
    "word2vec", "train", "--corpus",  corpus, "--quiet",    "--dim",  "8", "--epochs", "3",
    "--sample", "0",     "--threads", "1",    "--in-order", "--seed", "4", "--shards", "2"};
  auto in_memory = common;
  in_memory.insert(in_memory.end(), {"--output", corpus + ".memory.vec"});
  auto in_store = common;
  in_store.insert(in_store.end(), {"--output", corpus + ".store.vec", "--store", store});
  for (auto* args : {&in_memory, &in_store}) {
    auto r = run_darcy(*args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  auto read = [](const std::string& path) {
    std::ifstream in{path};
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
  };
  auto vectors = read(corpus + ".store.vec");
  EXPECT_FALSE(vectors.empty());
  EXPECT_EQ(vectors, read(corpus + ".memory.vec")) << "the backend changes nothing";
  return vectors;
}

// Issue 17: the rows live in one Redis instead of the shards' memory; the run is the same run,
// and the trained rows can be read from Redis with no service at all.
TEST(word2vec_cli, trains_the_same_vectors_with_its_rows_in_redis) {
  auto redis = darcy::testing::redis_server::start({});
  ASSERT_TRUE(redis) << render(error_of(redis));
  auto vectors = vectors_with_store("w2v-redis.txt", (*redis)->url("w2v-cli"));
  auto reader = stores::redis_store::open_reader((*redis)->url("w2v-cli"), "w2v.in", 1 << 20, 0);
  ASSERT_TRUE(reader) << render(error_of(reader));
  EXPECT_EQ((*reader)->stats().rows, 6u);
  std::istringstream lines{vectors};
  std::string header, word;
  std::getline(lines, header);
  while (lines >> word) {
    std::vector<float> written(8), stored(8);
    for (auto& v : written)
      lines >> v;
    std::string_view key = word;
    ASSERT_FALSE((*reader)->lookup({&key, 1}, stored));
    for (size_t i = 0; i < 8; ++i)
      EXPECT_NEAR(stored[i], written[i], 1e-5) << word << "[" << i << "]";
  }
  auto bad = run_darcy({"word2vec", "train", "--corpus", write_temp_file("w2v-bad.txt", "a b\n"),
                        "--quiet", "--store", "redis://127.0.0.1:0/x"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad port"), std::string::npos) << bad.err;
}

TEST(word2vec_cli, trains_the_same_vectors_with_its_rows_in_leveldb_and_keeps_them_there) {
  auto store = std::filesystem::temp_directory_path().string() + "/w2v-leveldb-store";
  std::filesystem::remove_all(store);
  vectors_with_store("w2v-leveldb.txt", "leveldb:" + store);
  for (auto table : {"w2v.in", "w2v.out"})
    for (auto shard : {"shard-0", "shard-1"})
      EXPECT_TRUE(std::filesystem::exists(store + "/" + table + "/" + shard + "/CURRENT"))
        << "no LevelDB database at " << store << "/" << table << "/" << shard;
  auto bad = run_darcy({"word2vec", "train", "--corpus", write_temp_file("w2v-bad.txt", "a b\n"),
                        "--quiet", "--store", "leveldb:"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--store leveldb:DIR needs a directory"), std::string::npos) << bad.err;
  std::filesystem::remove_all(store);
}

// Issue 13: with --min-count N, words seen fewer than N times in the corpus are not in the
// vector file, nor among neighbours, however many epochs or batches saw them.
TEST(word2vec_cli, min_count_keeps_rare_words_out_of_vectors_and_neighbours) {
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text += i % 2 ? "red green blue red green blue" : "one two three one two three";
    // Twelve rare words, each seen once or twice, spread over many batches.
    if (i % 17 == 0)
      text += " rare" + std::to_string(i / 17);
    if (i % 33 == 0)
      text += " twice" + std::to_string(i / 66);
    text += "\n";
  }
  auto corpus = write_temp_file("w2v-mincount.txt", text);
  auto vectors = corpus + ".vec";
  auto checkpoint = corpus + ".ckpt";
  auto r = run_darcy({"word2vec", "train", "--corpus", corpus, "--quiet", "--dim", "8", "--epochs",
                      "10", "--batch-words", "50", "--min-count", "3", "--output", vectors,
                      "--checkpoint", checkpoint});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("6 word vectors"), std::string::npos) << r.out;
  std::ifstream in{vectors};
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "6 8");
  std::string line;
  while (std::getline(in, line)) {
    auto word = line.substr(0, line.find(' '));
    EXPECT_EQ(word.find("rare"), std::string::npos) << word;
    EXPECT_EQ(word.find("twice"), std::string::npos) << word;
  }
  auto near = run_darcy({"word2vec", "neighbors", "red", "-k", "5", "--checkpoint", checkpoint});
  ASSERT_EQ(near.exit_code, 0) << near.err;
  EXPECT_EQ(near.out.find("rare"), std::string::npos) << near.out;
  EXPECT_EQ(near.out.find("twice"), std::string::npos) << near.out;
  auto rare = run_darcy({"word2vec", "neighbors", "rare1", "--vectors", vectors});
  EXPECT_EQ(rare.exit_code, 1);
}

} // namespace
} // namespace darcy::test
