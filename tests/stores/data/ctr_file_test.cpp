// Criteo files: written rows read back field for field, plain and gzip; every malformed line
// is one error naming file:line (or is counted and skipped), and a gzip file cut short is an
// error, never a silent end.
#include "stores/data/ctr_file.hpp"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

std::string fields(const std::string& label, size_t ints, size_t cats, const std::string& cat) {
  std::string line = label;
  for (size_t i = 0; i < ints; ++i)
    line += "\t" + std::to_string(i);
  for (size_t i = 0; i < cats; ++i)
    line += "\t" + cat;
  return line;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream{path, std::ios::binary} << text;
}

TEST(ctr_file, written_rows_read_back_field_for_field_plain_and_gzip) {
  test::temp_dir dir{"ctr_file"};
  compute::ctr_generator gen{{.fresh_rate = 0.1, .seed = 9}};
  for (auto name : {"rows.tsv", "rows.tsv.gz"}) {
    auto path = dir.path() + "/" + name;
    auto out = ctr_writer::open(path);
    ASSERT_TRUE(out) << render(out.error());
    for (uint64_t i = 0; i < 500; ++i)
      ASSERT_FALSE((*out)->write(gen.row(i)));
    ASSERT_FALSE((*out)->close());
    auto in = ctr_reader::open(path);
    ASSERT_TRUE(in) << render(in.error());
    ctr_row row;
    for (uint64_t i = 0; i < 500; ++i) {
      auto got = (*in)->next(row);
      ASSERT_TRUE(got && *got) << name << " row " << i;
      auto want = gen.row(i);
      EXPECT_EQ(row.label, want.label);
      EXPECT_EQ(row.int_present, want.int_present);
      for (size_t j = 0; j < compute::ctr_int_fields; ++j)
        EXPECT_EQ(row.ints[j], want.ints[j]);
      for (size_t c = 0; c < compute::ctr_cat_fields; ++c) {
        ASSERT_EQ(row.cats[c].empty(), !want.cat_present[c]);
        if (want.cat_present[c]) {
          EXPECT_EQ(std::stoul(std::string{row.cats[c]}, nullptr, 16), want.cats[c]);
        }
      }
    }
    auto end = (*in)->next(row);
    ASSERT_TRUE(end);
    EXPECT_FALSE(*end) << name;
    EXPECT_EQ((*in)->lines(), 500u);
  }
  EXPECT_LT(std::filesystem::file_size(dir.path() + "/rows.tsv.gz"),
            std::filesystem::file_size(dir.path() + "/rows.tsv"));
}

TEST(ctr_file, every_malformed_line_is_one_error_naming_the_line) {
  test::temp_dir dir{"ctr_file"};
  auto good = fields("1", 13, 26, "68fd1e64");
  struct {
    const char* what;
    std::string line;
    const char* reason;
  } cases[] = {
    {"a short line", fields("0", 13, 20, "68fd1e64"), "34 tab-separated fields, not 40"},
    {"a long line", fields("0", 13, 27, "68fd1e64"), "41 tab-separated fields, not 40"},
    {"bad hex", fields("0", 13, 26, "68fd1e6g"), "categorical field 1 is '68fd1e6g'"},
    {"a short id", fields("0", 13, 26, "68fd1e"), "not 8 hex digits"},
    {"a bad label", fields("2", 13, 26, "68fd1e64"), "the label is '2'"},
    {"an empty label", fields("", 13, 26, "68fd1e64"), "the label is ''"},
    {"a bad integer", "0\t1x" + fields("", 12, 26, "68fd1e64"), "integer field 1 is '1x'"},
    {"a huge line", good + std::string(ctr_max_line, 'x'), "longer than 65536 bytes"},
  };
  for (auto& c : cases) {
    auto path = dir.path() + "/bad.tsv";
    write_text(path, good + "\n" + good + "\n" + c.line + "\n" + good + "\n");
    auto in = ctr_reader::open(path);
    ASSERT_TRUE(in);
    ctr_row row;
    ASSERT_TRUE(*(*in)->next(row));
    ASSERT_TRUE(*(*in)->next(row));
    auto bad = (*in)->next(row);
    ASSERT_FALSE(bad) << c.what;
    EXPECT_TRUE(is(bad.error(), errc::corrupt_file)) << c.what;
    auto text = render(bad.error());
    EXPECT_NE(text.find(path + ":3: "), std::string::npos) << c.what << ": " << text;
    EXPECT_NE(text.find(c.reason), std::string::npos) << c.what << ": " << text;
    EXPECT_LT(text.size(), 300u) << c.what << ": the error quotes no whole field";

    auto skipping = ctr_reader::open(path, true);
    size_t rows = 0;
    for (;;) {
      auto got = (*skipping)->next(row);
      ASSERT_TRUE(got) << c.what << ": " << render(got.error());
      if (!*got)
        break;
      ++rows;
    }
    EXPECT_EQ(rows, 3u) << c.what;
    EXPECT_EQ((*skipping)->skipped(), 1u) << c.what;
  }
}

TEST(ctr_file, a_line_of_empty_fields_is_a_row_with_every_value_missing) {
  test::temp_dir dir{"ctr_file"};
  auto path = dir.path() + "/empty.tsv";
  write_text(path, "0" + std::string(39, '\t') + "\r\n");
  auto in = ctr_reader::open(path);
  ctr_row row;
  auto got = (*in)->next(row);
  ASSERT_TRUE(got && *got) << (got ? "end" : render(got.error()));
  EXPECT_FALSE(row.label);
  for (bool present : row.int_present)
    EXPECT_FALSE(present);
  for (auto cat : row.cats)
    EXPECT_TRUE(cat.empty());
}

TEST(ctr_file, a_gzip_file_cut_short_is_an_error_not_an_end) {
  test::temp_dir dir{"ctr_file"};
  auto whole = dir.path() + "/rows.tsv.gz";
  compute::ctr_generator gen{{.seed = 4}};
  auto out = ctr_writer::open(whole);
  for (uint64_t i = 0; i < 2000; ++i)
    ASSERT_FALSE((*out)->write(gen.row(i)));
  ASSERT_FALSE((*out)->close());
  auto cut = dir.path() + "/cut.tsv.gz";
  std::filesystem::copy_file(whole, cut);
  std::filesystem::resize_file(cut, std::filesystem::file_size(whole) / 2);
  auto in = ctr_reader::open(cut);
  ctr_row row;
  caf::expected<bool> got = true;
  uint64_t rows = 0;
  while (got && *got) {
    got = (*in)->next(row);
    rows += got && *got;
  }
  ASSERT_FALSE(got) << "read " << rows << " rows and then saw an end";
  EXPECT_TRUE(is(got.error(), errc::corrupt_file));
  EXPECT_NE(render(got.error()).find("cut short"), std::string::npos) << render(got.error());
  EXPECT_LT(rows, 2000u);
}

TEST(ctr_file, a_missing_file_is_an_io_error_naming_it) {
  auto in = ctr_reader::open("/nonexistent/day_0.gz");
  ASSERT_FALSE(in);
  EXPECT_TRUE(is(in.error(), errc::io_error));
  EXPECT_NE(render(in.error()).find("/nonexistent/day_0.gz"), std::string::npos);
}

} // namespace
} // namespace darcy::stores
