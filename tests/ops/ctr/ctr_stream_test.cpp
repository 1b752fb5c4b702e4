// Tests ops/estimator/ctr_stream: a file followed as it grows (a half-written line waits for its
// newline), a stream that ends, malformed lines, and the drifting generator.
#include "ops/ctr/ctr_stream.hpp"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops::ctr {
namespace {

/// A valid line with label `label` and categorical field 1 set to `c1`.
std::string line(int label, const std::string& c1) {
  std::string s = std::to_string(label);
  for (int i = 0; i < 13; ++i)
    s += "\t" + std::to_string(i);
  s += "\t" + c1;
  for (int i = 1; i < 26; ++i)
    s += "\t";
  return s;
}

std::vector<stream_state> states(ctr_stream& s, size_t n, std::vector<std::string>* c1 = nullptr) {
  std::vector<stream_state> out;
  stores::ctr_row row;
  for (size_t i = 0; i < n; ++i) {
    auto got = s.next(row);
    EXPECT_TRUE(got) << render(got.error());
    if (!got)
      break;
    out.push_back(*got);
    if (*got == stream_state::row && c1)
      c1->emplace_back(row.cats[0]);
  }
  return out;
}

using enum stream_state;

TEST(ctr_stream, AFileThatGrowsIsFollowedAndAHalfWrittenLineWaitsForItsNewline) {
  test::temp_dir dir{"ctr_stream"};
  auto path = dir.path() + "/rows.tsv";
  std::ofstream out{path};
  out << line(1, "0000000a") << "\n" << line(0, "0000000b") << "\n";
  auto half = line(1, "0000000c");
  out << half.substr(0, 20) << std::flush;
  auto s = open_ctr_stream(path, {});
  ASSERT_TRUE(s) << render(s.error());
  std::vector<std::string> seen;
  EXPECT_EQ(states(**s, 3, &seen), (std::vector{row, row, waiting}));
  EXPECT_EQ(states(**s, 1), (std::vector{waiting})) << "still half a line";
  out << half.substr(20) << "\n" << std::flush;
  EXPECT_EQ(states(**s, 2, &seen), (std::vector{row, waiting}));
  EXPECT_EQ(seen, (std::vector<std::string>{"0000000a", "0000000b", "0000000c"}));
}

TEST(ctr_stream, StandardInputEndsAtItsEndWithALastLineWithoutNewline) {
  std::istringstream in{line(1, "0000000a") + "\n" + line(0, "0000000b")};
  auto s = ctr_line_stream(in, "stdin", false, false);
  EXPECT_EQ(states(*s, 4), (std::vector{row, row, ended, ended}));
}

TEST(ctr_stream, AMalformedLineNamesItsLineOrIsSkipped) {
  auto text = line(1, "0000000a") + "\nnot a row\n" + line(0, "0000000b") + "\n";
  std::istringstream strict_in{text}, lenient_in{text};
  auto strict = ctr_line_stream(strict_in, "feed", false, false);
  stores::ctr_row r;
  ASSERT_TRUE(strict->next(r));
  auto bad = strict->next(r);
  ASSERT_FALSE(bad);
  EXPECT_TRUE(is(bad.error(), errc::corrupt_file));
  EXPECT_NE(render(bad.error()).find("feed:2:"), std::string::npos) << render(bad.error());
  auto lenient = ctr_line_stream(lenient_in, "feed", false, true);
  EXPECT_EQ(states(*lenient, 3), (std::vector{row, row, ended}));
  EXPECT_EQ(lenient->skipped(), 1u);
}

TEST(ctr_stream, TheGeneratorMatchesItsFilesUntilItDriftsAndEndsAtItsRows) {
  ctr_stream_options o;
  o.generator = {.seed = 4, .max_ids = 20};
  o.rows = 300;
  o.drift_rows = 100;
  o.fresh_step = 0.5;
  auto s = open_ctr_stream("generate", o);
  ASSERT_TRUE(s) << render(s.error());
  compute::ctr_generator plain{o.generator};
  stores::ctr_row r;
  size_t fresh_late = 0, same_label_early = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    ASSERT_EQ(*(*s)->next(r), row) << i;
    auto p = plain.row(i);
    if (i < 100)
      same_label_early += r.label == p.label ? 1 : 0;
    // Phase 2 draws half of its ids fresh: values beyond the 20 of a field.
    if (i >= 200 && !r.cats[0].empty() &&
        std::stoul(std::string{r.cats[0]}, nullptr, 16) != (p.cat_present[0] ? p.cats[0] : 0))
      ++fresh_late;
  }
  EXPECT_EQ(same_label_early, 100u) << "phase 0 is the plain generator";
  EXPECT_GT(fresh_late, 20u) << "fresh ids grow with the phases";
  EXPECT_EQ(*(*s)->next(r), ended);
  o.fresh_step = 2;
  EXPECT_FALSE(open_ctr_stream("generate", o));
  EXPECT_FALSE(open_ctr_stream("/no/such/file", {}));
}

} // namespace
} // namespace darcy::ops::ctr
