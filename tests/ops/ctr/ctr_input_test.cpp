// Criteo files as Estimator input: each batch's features and labels are the file's rows (an
// empty field gives no string, an empty count 0), shards split the rows, passes repeat, and a
// position resumes at the next row; bad options and missing files are errors.
#include "ops/ctr/ctr_input.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops::ctr {
namespace {

namespace ce = compute::estimator;
using estimator::example_table;
using estimator::input_pipeline;

/// Row i: label i % 2, the counts i and empties, C1 = "%08x" of i, C2 empty, the rest "0000000a".
std::string line(size_t i) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08zx", i);
  std::string out = std::to_string(i % 2) + "\t" + std::to_string(i);
  for (size_t j = 1; j < 13; ++j)
    out += "\t";
  out += std::string{"\t"} + hex + "\t";
  for (size_t f = 2; f < 26; ++f)
    out += "\t0000000a";
  return out + "\n";
}

std::string write_rows(const test::temp_dir& dir, size_t rows) {
  auto path = dir.path() + "/rows.tsv";
  std::ofstream out{path};
  for (size_t i = 0; i < rows; ++i)
    out << line(i);
  return path;
}

/// The first count of every row of the remaining batches, and the batches' sizes.
std::vector<double> first_counts(input_pipeline& in, std::vector<size_t>* sizes = nullptr) {
  std::vector<double> out;
  for (;;) {
    auto b = in.next();
    EXPECT_TRUE(b) << render(b.error());
    if (!b || !*b)
      return out;
    auto& ints = (*b)->features.at(ctr_ints_key).numbers;
    for (size_t r = 0; r < (*b)->rows(); ++r)
      out.push_back(ints[r * 13]);
    if (sizes)
      sizes->push_back((*b)->rows());
  }
}

TEST(ctr_input, batches_hold_the_files_rows_field_for_field) {
  test::temp_dir dir{"ctr_input"};
  auto path = write_rows(dir, 5);
  auto in = ctr_file_input(path, {.batch_size = 5})();
  ASSERT_TRUE(in) << render(in.error());
  auto b = (*in)->next();
  ASSERT_TRUE(b && *b);
  auto& f = (*b)->features;
  EXPECT_EQ(f.size(), 27u);
  EXPECT_EQ(f.at("ints").width, 13u);
  EXPECT_EQ(f.at("ints").numbers[13 * 3], 3.0);
  EXPECT_EQ(f.at("ints").numbers[13 * 3 + 1], 0.0) << "an empty count reads 0";
  EXPECT_EQ(f.at("C1").strings[4], std::vector<std::string>{"00000004"});
  EXPECT_TRUE(f.at("C2").strings[4].empty()) << "an empty field gives no string";
  EXPECT_EQ(f.at("C26").strings[0], std::vector<std::string>{"0000000a"});
  EXPECT_EQ((*b)->labels(3, 0), 1.0f);
  EXPECT_EQ((*b)->labels(4, 0), 0.0f);
  auto end = (*in)->next();
  ASSERT_TRUE(end);
  EXPECT_FALSE(*end);
}

TEST(ctr_input, predict_instances_carry_the_chosen_rows_field_for_field) {
  test::temp_dir dir{"ctr_instances"};
  auto in = ctr_file_input(write_rows(dir, 5), {.batch_size = 5})();
  ASSERT_TRUE(in) << render(in.error());
  auto b = (*in)->next();
  ASSERT_TRUE(b && *b);
  example_table t{(*b)->features, (*b)->labels};
  auto instances = ctr_instances(t, {4, 1});
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_EQ(instances[0].size(), 27u);
  EXPECT_EQ(instances[0]["ints"].size(), 13u);
  EXPECT_EQ(instances[0]["ints"][0], 4.0);
  EXPECT_EQ(instances[1]["ints"][0], 1.0);
  EXPECT_EQ(instances[0]["C1"], nlohmann::json::array({"00000004"}));
  EXPECT_EQ(instances[0]["C2"], nlohmann::json::array()) << "an empty field stays empty";
  EXPECT_EQ(instances[1]["C26"], nlohmann::json::array({"0000000a"}));
}

TEST(ctr_input, shards_passes_limits_and_positions_read_the_rows_they_say) {
  test::temp_dir dir{"ctr_input"};
  auto path = write_rows(dir, 10);
  struct case_t {
    const char* name;
    ctr_input_options options;
    std::vector<double> expected;
  } cases[] = {
    {"all", {.batch_size = 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
    {"shard 1 of 3", {.batch_size = 4, .shard = 1, .shards = 3}, {1, 4, 7}},
    {"two passes", {.batch_size = 4, .epochs = 2, .max_rows = 3}, {0, 1, 2, 0, 1, 2}},
    {"first rows, sharded", {.batch_size = 4, .max_rows = 6, .shard = 0, .shards = 2}, {0, 2, 4}},
  };
  for (auto& c : cases) {
    auto in = ctr_file_input(path, c.options)();
    ASSERT_TRUE(in) << c.name;
    EXPECT_EQ(first_counts(**in), c.expected) << c.name;
  }
  // A position taken after a batch resumes at the next row, in a fresh pipeline.
  auto in = ctr_file_input(path, {.batch_size = 3, .epochs = 2})();
  ASSERT_TRUE(in);
  // Batches run across passes: 0-2, 3-5, 6-8, 9 0 1, 2-4.
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE((*in)->next());
  auto position = (*in)->position();
  EXPECT_EQ(position, "1:5");
  auto rest = first_counts(**in);
  auto resumed = ctr_file_input(path, {.batch_size = 3, .epochs = 2})();
  ASSERT_TRUE(resumed);
  ASSERT_FALSE((*resumed)->seek(position));
  EXPECT_EQ(first_counts(**resumed), rest);
  EXPECT_EQ(rest, (std::vector<double>{5, 6, 7, 8, 9}));
  EXPECT_TRUE(is((*resumed)->seek("0:99"), errc::invalid_argument));
  EXPECT_TRUE(is((*resumed)->seek("x"), errc::invalid_argument));
}

TEST(ctr_input, bad_options_missing_files_and_malformed_lines_are_errors) {
  test::temp_dir dir{"ctr_input"};
  auto path = write_rows(dir, 3);
  EXPECT_TRUE(is(ctr_file_input(path, {.batch_size = 0})().error(), errc::invalid_config));
  EXPECT_TRUE(is(ctr_file_input(path, {.shard = 2, .shards = 2})().error(), errc::invalid_config));
  EXPECT_TRUE(is(ctr_file_input(dir.path() + "/none", {})().error(), errc::io_error));
  std::ofstream{path, std::ios::app} << "1\tnot a line\n" << line(3);
  auto strict = ctr_file_input(path, {.batch_size = 10})();
  ASSERT_TRUE(strict);
  auto b = (*strict)->next();
  ASSERT_FALSE(b);
  EXPECT_TRUE(is(b.error(), errc::corrupt_file));
  EXPECT_NE(render(b.error()).find("rows.tsv:4"), std::string::npos) << render(b.error());
  auto lenient = ctr_file_input(path, {.batch_size = 10, .skip_malformed = true})();
  ASSERT_TRUE(lenient);
  EXPECT_EQ(first_counts(**lenient), (std::vector<double>{0, 1, 2, 3}));
}

} // namespace
} // namespace darcy::ops::ctr
