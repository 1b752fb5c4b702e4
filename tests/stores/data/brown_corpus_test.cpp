#include "stores/data/brown_corpus.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

TEST(brown_corpus, tagged_tokens_split_at_their_last_slash_and_words_are_lower_cased) {
  struct {
    const char* line;
    std::vector<std::pair<std::string, std::string>> expected;
  } cases[] = {
    {"\tThe/at Fulton/np-tl", {{"the", "at"}, {"fulton", "np-tl"}}},
    {"1/2/cd", {{"1/2", "cd"}}},
    {"untagged /slash-first", {{"untagged", ""}, {"/slash-first", ""}}},
    {"   ", {}},
  };
  for (auto& c : cases) {
    std::vector<std::pair<std::string, std::string>> got;
    for (auto& w : tagged_words(c.line))
      got.emplace_back(w.word, w.tag);
    EXPECT_EQ(got, c.expected) << c.line;
  }
}

TEST(brown_corpus, the_catalog_lists_documents_in_order_with_sorted_category_labels) {
  test::temp_dir dir{"brown_catalog"};
  EXPECT_TRUE(is(read_brown_catalog(dir.path()).error(), errc::not_found));
  std::ofstream{dir.path() + "/cats.txt"} << "cb01 news\n\nca01 adventure\nca02 news\n";
  auto c = read_brown_catalog(dir.path());
  ASSERT_TRUE(c) << render(c.error());
  EXPECT_EQ(c->categories, (std::vector<std::string>{"adventure", "news"}));
  ASSERT_EQ(c->documents.size(), 3u) << "blank lines are skipped";
  EXPECT_EQ(c->documents[0].path, dir.path() + "/cb01");
  EXPECT_EQ(c->documents[0].label, 1u);
  EXPECT_EQ(c->documents[1].category, "adventure");
  EXPECT_EQ(c->documents[1].label, 0u);
}

// A line without its category (a copy cut short, or damaged) is refused, naming the line.
TEST(brown_corpus, a_catalog_line_without_its_category_is_refused_with_its_number) {
  test::temp_dir dir{"brown_catalog_bad"};
  for (const char* text : {"ca01 news\nbad-line\nca02 news\n", "ca01 news\nca0"}) {
    std::ofstream{dir.path() + "/cats.txt"} << text;
    auto c = read_brown_catalog(dir.path());
    ASSERT_FALSE(c) << text;
    EXPECT_TRUE(is(c.error(), errc::corrupt_file)) << render(c.error());
    EXPECT_NE(render(c.error()).find("cats.txt:2:"), std::string::npos) << render(c.error());
  }
}

} // namespace
} // namespace darcy::stores
