#include "apps/word2vec/evaluation.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "apps/word2vec/vectors_io.hpp"
#include "messages/error.hpp"

namespace darcy::word2vec {
namespace {

namespace fs = std::filesystem;

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("darcy-eval-test-" + name);
}

// king - man + woman = queen holds exactly in these vectors.
word_vectors toy_vectors() {
  word_vectors v;
  v.words = {"king", "queen", "man", "woman", "apple"};
  v.vectors.resize(5, 3);
  v.vectors << 1, 1, 0, //
    1, 0, 1,            //
    0, 1, 0,            //
    0, 0, 1,            //
    -1, -1, -1;
  return v;
}

TEST(word2vec_evaluation, analogies_follow_compute_accuracy) {
  auto file = temp("analogies.txt");
  std::ofstream{file} << ": family\nMan King Woman Queen\nman woman king queen\n"
                      << "man king woman apple\nman king woman missing\n";
  auto r = evaluate_analogies(toy_vectors(), file.string());
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->questions, 4u);
  EXPECT_EQ(r->seen, 3u);
  EXPECT_EQ(r->correct, 2u);
  fs::remove(file);
}

TEST(word2vec_evaluation, similarity_is_spearman_over_covered_pairs) {
  auto file = temp("sim.tsv");
  std::ofstream{file} << "# comment\nking\tqueen\t5\nking\tman\t7\nking\tapple\t1\nking\tzzz\t3\n";
  auto r = evaluate_similarity(toy_vectors(), file.string());
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->pairs, 4u);
  EXPECT_EQ(r->covered, 3u);
  // cos(king, man) > cos(king, queen) > cos(king, apple) orders as the human scores do.
  EXPECT_DOUBLE_EQ(r->spearman, 1.0);
  fs::remove(file);
}

TEST(word2vec_evaluation, missing_or_malformed_files_are_clear_errors) {
  EXPECT_TRUE(is(evaluate_analogies(toy_vectors(), "/nonexistent/q.txt").error(), errc::not_found));
  EXPECT_TRUE(
    is(evaluate_similarity(toy_vectors(), "/nonexistent/s.tsv").error(), errc::not_found));
  auto file = temp("bad.txt");
  std::ofstream{file} << "a b c\n";
  auto r = evaluate_analogies(toy_vectors(), file.string());
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::corrupt_file));
  EXPECT_NE(render(r.error()).find(":1:"), std::string::npos) << render(r.error());
  fs::remove(file);
}

TEST(word2vec_vectors_io, text_and_binary_round_trip) {
  auto v = toy_vectors();
  v.vectors(0, 0) = 0.123456f;
  for (auto format : {vectors_format::text, vectors_format::binary}) {
    auto file = temp("vectors");
    ASSERT_FALSE(write_vectors(v, file.string(), format));
    auto back = read_vectors(file.string());
    ASSERT_TRUE(back) << render(back.error());
    EXPECT_EQ(back->words, v.words);
    EXPECT_TRUE(back->vectors.isApprox(v.vectors, 1e-5f));
    if (format == vectors_format::binary) {
      EXPECT_EQ(back->vectors, v.vectors);
    }
    // Truncation is reported, not read as zeros.
    auto size = fs::file_size(file);
    fs::resize_file(file, size - 6);
    auto cut = read_vectors(file.string());
    ASSERT_FALSE(cut);
    EXPECT_TRUE(is(cut.error(), errc::corrupt_file)) << render(cut.error());
    fs::remove(file);
  }
}

} // namespace
} // namespace darcy::word2vec
