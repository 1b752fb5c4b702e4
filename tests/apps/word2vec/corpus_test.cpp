#include "apps/word2vec/corpus.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::word2vec {
namespace {

TEST(corpus, text_splits_sentences_by_line_and_counts_words_most_frequent_first) {
  auto c = parse_corpus("b a b\n\n  c b\ta\n", corpus_format::text, "mem");
  ASSERT_TRUE(c) << render(c.error());
  EXPECT_EQ(c->tokens.size(), 6u);
  EXPECT_EQ(c->sentence_ends, (std::vector<uint32_t>{3, 6}));
  ASSERT_EQ(c->words.size(), 3u);
  EXPECT_EQ(c->words[0].word, "b");
  EXPECT_EQ(c->words[0].count, 3u);
  EXPECT_EQ(c->words[1].word, "a");
  EXPECT_EQ(c->words[2].word, "c");
  for (auto& t : c->tokens)
    EXPECT_EQ(c->words[t.stat].word, t.word);
}

TEST(corpus, brown_strips_tags_and_lowercases) {
  auto c = parse_corpus("\tThe/at Jury/nn-tl said/vbd 1/2/cd ./.\n", corpus_format::brown, "mem");
  ASSERT_TRUE(c) << render(c.error());
  std::vector<std::string> words;
  for (auto& t : c->tokens)
    words.emplace_back(t.word);
  EXPECT_EQ(words, (std::vector<std::string>{"the", "jury", "said", "1/2", "."}));
}

TEST(corpus, long_sentences_are_split_at_the_word2vec_limit) {
  std::string line;
  for (size_t i = 0; i < max_sentence_length + 5; ++i)
    line += "w ";
  auto c = parse_corpus(line, corpus_format::text, "mem");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->sentence_ends,
            (std::vector<uint32_t>{static_cast<uint32_t>(max_sentence_length),
                                   static_cast<uint32_t>(max_sentence_length + 5)}));
}

TEST(corpus, bad_input_is_a_clear_error) {
  struct bad_case {
    const char* what;
    std::string text;
    errc expected;
    const char* mentions;
  };
  std::vector<bad_case> cases{
    {"empty", "", errc::empty_batch, "no words"},
    {"only blanks", " \n\t\n", errc::empty_batch, "no words"},
    {"binary garbage",
     std::string("ok\n\x7f"
                 "ELF\x02\x01\x00\x00",
                 10),
     errc::invalid_argument, "mem:2: binary data"},
    {"invalid UTF-8", "fine\nbad \xC3\x28 byte\n", errc::invalid_argument, "mem:2: invalid UTF-8"},
    {"overlong UTF-8", "\xC0\xAF", errc::invalid_argument, "invalid UTF-8"},
    {"truncated UTF-8", "caf\xC3", errc::invalid_argument, "invalid UTF-8"},
  };
  for (auto& c : cases) {
    auto r = parse_corpus(c.text, corpus_format::text, "mem");
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), c.expected)) << c.what << ": " << render(r.error());
    EXPECT_NE(render(r.error()).find(c.mentions), std::string::npos)
      << c.what << ": " << render(r.error());
  }
}

TEST(corpus, valid_multibyte_utf8_is_kept) {
  auto c = parse_corpus("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n", corpus_format::text, "mem");
  ASSERT_TRUE(c) << render(c.error());
  EXPECT_EQ(c->tokens[0].word, "caf\xC3\xA9");
}

TEST(corpus, reads_a_directory_in_name_order_and_reports_missing_paths) {
  auto dir = std::filesystem::temp_directory_path() / "darcy-corpus-dir-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream{dir / "b.txt"} << "second\n";
  std::ofstream{dir / "a.txt"} << "first\n";
  auto c = read_corpus(dir.string(), corpus_format::text);
  ASSERT_TRUE(c) << render(c.error());
  ASSERT_EQ(c->tokens.size(), 2u);
  EXPECT_EQ(c->tokens[0].word, "first");
  auto missing = read_corpus((dir / "nope").string(), corpus_format::text);
  EXPECT_TRUE(is(missing.error(), errc::not_found));
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(is(parse_format("xml").error(), errc::invalid_argument));
}

// A Brown directory is read through its cats.txt: the documents it lists, each of which must
// be there, and no line of it damaged.
TEST(corpus, a_brown_catalog_names_its_missing_document_or_damaged_line) {
  struct catalog_case {
    const char* name;
    const char* cats;
    errc code;
    const char* names;
  } cases[] = {
    {"complete", "ca02 news\nca01 news\n", errc{}, ""},
    {"a listed document missing", "ca01 news\nca03 news\n", errc::not_found, "ca03"},
    {"a line cut short", "ca01 news\nca0", errc::corrupt_file, "cats.txt:2:"},
  };
  for (auto& c : cases) {
    test::temp_dir dir{"corpus_brown"};
    std::ofstream{dir.path() + "/ca01"} << "The/at first/od ./.\n";
    std::ofstream{dir.path() + "/ca02"} << "A/at second/od ./.\n";
    std::ofstream{dir.path() + "/cats.txt"} << c.cats;
    auto read = read_corpus(dir.path(), corpus_format::brown);
    if (c.code == errc{}) {
      ASSERT_TRUE(read) << c.name << ": " << render(read.error());
      EXPECT_EQ(read->tokens[0].word, "the") << c.name << ": files in name order";
      continue;
    }
    ASSERT_FALSE(read) << c.name;
    EXPECT_TRUE(is(read.error(), c.code)) << c.name << ": " << render(read.error());
    EXPECT_NE(render(read.error()).find(c.names), std::string::npos) << render(read.error());
  }
}

} // namespace
} // namespace darcy::word2vec
