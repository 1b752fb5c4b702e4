// Readers: delimited text with a header, IDX files plain and gzipped, text lines; damaged
// files fail with errors that name the file and the line.
#include "ops/estimator/readers.hpp"

#include <zlib.h>

#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops::estimator {
namespace {

std::string idx(uint32_t magic, std::vector<uint32_t> dims, const std::string& payload) {
  std::string out;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8)
      out.push_back(static_cast<char>((v >> s) & 0xff));
  };
  put(magic);
  for (auto d : dims)
    put(d);
  return out + payload;
}

void write(const std::string& path, const std::string& bytes, bool gzipped = false) {
  if (!gzipped) {
    std::ofstream{path, std::ios::binary} << bytes;
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

TEST(readers, delimited_files_give_numeric_string_and_label_columns) {
  test::temp_dir dir{"readers_csv"};
  struct {
    const char* what;
    char delimiter;
    std::string text;
  } cases[] = {
    {"csv", ',', "age,words,label\n31,red blue,1\r\n\n45,green,0\n"},
    {"tsv", '\t', "age\twords\tlabel\n31\tred blue\t1\n45\tgreen\t0\n"},
  };
  for (auto& c : cases) {
    auto path = dir.path() + "/" + c.what;
    write(path, c.text);
    auto t = read_delimited(
      path,
      {.delimiter = c.delimiter, .label_column = "label", .numeric = {"age"}, .multi_value = ' '});
    ASSERT_TRUE(t) << c.what << ": " << render(t.error());
    ASSERT_EQ(t->rows(), 2u) << c.what;
    EXPECT_EQ(t->features.at("age").numbers, (std::vector<double>{31, 45})) << c.what;
    EXPECT_EQ(t->features.at("words").strings,
              (std::vector<std::vector<std::string>>{{"red", "blue"}, {"green"}}))
      << c.what;
    EXPECT_EQ(t->labels, (matrix{{1}, {0}})) << c.what;
    EXPECT_FALSE(t->features.count("label"));
  }
}

TEST(readers, idx_files_plain_or_gzipped_give_scaled_pixels_and_labels) {
  test::temp_dir dir{"readers_idx"};
  std::string pixels{"\x00\xff\x33\x66\x99\xcc\x00\x00", 8}; // 2 images of 2 × 2
  for (bool gz : {false, true}) {
    auto images = dir.path() + (gz ? "/images.gz" : "/images");
    auto labels = dir.path() + (gz ? "/labels.gz" : "/labels");
    write(images, idx(0x803, {2, 2, 2}, pixels), gz);
    write(labels, idx(0x801, {2}, std::string{"\x07\x02", 2}), gz);
    auto t = read_idx(images, labels, "pixels");
    ASSERT_TRUE(t) << render(t.error());
    auto& f = t->features.at("pixels");
    EXPECT_EQ(f.width, 4u);
    EXPECT_EQ(f.numbers, (std::vector<double>{0, 1, 0.2, 0.4, 0.6, 0.8, 0, 0}));
    EXPECT_EQ(t->labels, (matrix{{7}, {2}}));
  }
}

TEST(readers, damaged_or_missing_files_are_refused_with_the_place_named) {
  test::temp_dir dir{"readers_bad"};
  auto p = [&](const std::string& name) { return dir.path() + "/" + name; };
  write(p("ragged.csv"), "a,b\n1,2\n3\n");
  write(p("text.csv"), "a,b\n1,2\nx,4\n");
  write(p("truncated"), idx(0x803, {2, 2, 2}, "abc"));
  write(p("wrong_magic"), idx(0x802, {2, 2, 2}, std::string(8, '\0')));
  write(p("images"), idx(0x803, {2, 1, 1}, "ab"));
  write(p("three_labels"), idx(0x801, {3}, "abc"));
  struct {
    const char* what;
    caf::error error;
    errc expected;
    const char* mentions;
  } cases[] = {
    {"a ragged row", read_delimited(p("ragged.csv"), {.numeric = {"a"}}).error(),
     errc::corrupt_file, "line 3"},
    {"text in a numeric column", read_delimited(p("text.csv"), {.numeric = {"a"}}).error(),
     errc::corrupt_file, "line 3"},
    {"an unknown column", read_delimited(p("text.csv"), {.label_column = "c"}).error(),
     errc::invalid_config, "'c'"},
    {"a missing file", read_delimited(p("none.csv"), {}).error(), errc::not_found, "none.csv"},
    {"a truncated IDX file", read_idx(p("truncated"), "", "x").error(), errc::corrupt_file,
     "truncated"},
    {"a wrong magic number", read_idx(p("wrong_magic"), "", "x").error(), errc::corrupt_file,
     "wrong_magic"},
    {"counts that differ", read_idx(p("images"), p("three_labels"), "x").error(),
     errc::corrupt_file, "3 labels for 2 images"},
    {"a missing IDX file", read_idx(p("none"), "", "x").error(), errc::not_found, "none"},
  };
  for (auto& c : cases) {
    EXPECT_TRUE(is(c.error, c.expected)) << c.what << ": " << render(c.error);
    EXPECT_NE(render(c.error).find(c.mentions), std::string::npos)
      << c.what << ": " << render(c.error);
  }
}

TEST(readers, text_lines_become_rows_of_tokens) {
  test::temp_dir dir{"readers_text"};
  write(dir.path() + "/t.txt", "the cat  sat\n\n on it \n");
  auto t = read_text_lines(dir.path() + "/t.txt", "words");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->features.at("words").strings,
            (std::vector<std::vector<std::string>>{{"the", "cat", "sat"}, {"on", "it"}}));
}

} // namespace
} // namespace darcy::ops::estimator
