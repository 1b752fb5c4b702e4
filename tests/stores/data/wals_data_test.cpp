#include "stores/data/wals_data.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

class wals_data_test : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("darcy_wals_data_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& content) {
    auto path = (dir_ / name).string();
    std::ofstream{path} << content;
    return path;
  }
  wals_data_spec spec(const std::string& path, const std::string& format = "lastfm") {
    wals_data_spec s;
    s.format = format;
    s.path = path;
    return s;
  }
  fs::path dir_;
};

TEST_F(wals_data_test, ReadsLastfmTriplesWithStringIdsAndCrLf) {
  auto d = load_dataset(spec(file("ua.dat", "2\t51\t13883\r\n2\t52\t11690\r\n\r\n7\t51\t3\r\n")));
  ASSERT_TRUE(d) << render(d.error());
  EXPECT_EQ(d->row_ids, (std::vector<std::string>{"2", "7"}));
  EXPECT_EQ(d->col_ids, (std::vector<std::string>{"51", "52"}));
  EXPECT_EQ(d->matrix.nnz(), 3u);
  EXPECT_EQ(d->matrix.values[0], 13883.0f);
  EXPECT_EQ(d->users, 2u);
  EXPECT_EQ(d->items, 2u);
}

TEST_F(wals_data_test, CsvWithHeader) {
  auto d = load_dataset(spec(file("x.csv", "user,item,plays\nu1,a,1.5\nu2,b,2\n"), "csv"));
  ASSERT_TRUE(d) << render(d.error());
  EXPECT_EQ(d->matrix.nnz(), 2u);
}

struct bad_case {
  const char* what;
  const char* content;
  errc code;
  const char* mentions;
};

TEST_F(wals_data_test, BadInputIsAClearError) {
  bad_case cases[] = {
    {"too few fields", "1\t2\t3\n4\t5\n", errc::corrupt_file, ":2:"},
    {"value not a number", "1\t2\t3\n4\t5\tlots\n", errc::corrupt_file, ":2:"},
    {"negative weight", "1\t2\t3\n4\t5\t-2\n", errc::invalid_argument, ":2: weight -2"},
    {"nan weight", "1\t2\tnan\n", errc::invalid_argument, ":1: weight nan"},
    {"empty matrix", "\n\n", errc::invalid_argument, "no entries"},
  };
  for (auto& c : cases) {
    auto d = load_dataset(spec(file("bad.dat", c.content)));
    ASSERT_FALSE(d) << c.what;
    EXPECT_TRUE(is(d.error(), c.code)) << c.what << ": " << render(d.error());
    EXPECT_NE(render(d.error()).find(c.mentions), std::string::npos)
      << c.what << ": " << render(d.error());
  }
  EXPECT_TRUE(is(error_of(load_dataset(spec((dir_ / "missing").string()))), errc::not_found));
  EXPECT_TRUE(
    is(error_of(load_dataset(spec(file("a.dat", "1\t2\t3\n"), "xml"))), errc::invalid_argument));
}

TEST_F(wals_data_test, SkipsAndCountsMalformedLinesOnRequest) {
  auto s = spec(file("m.dat", "1\t2\t3\ngarbage\n4\t5\tx\n4\t6\t1\n"));
  s.skip_malformed = true;
  auto d = load_dataset(s);
  ASSERT_TRUE(d) << render(d.error());
  EXPECT_EQ(d->skipped_lines, 2u);
  EXPECT_EQ(d->matrix.nnz(), 2u);
}

TEST_F(wals_data_test, FeaturesBecomeExtraColumnsAndRows) {
  auto s = spec(file("ua.dat", "u1\ta\t5\nu2\tb\t3\n"));
  s.row_features = file("friends.dat", "userID\tfriendID\nu1\tu2\nu2\tu1\nnobody\tu1\n");
  s.format = "tsv";
  s.col_features = file("tags.dat", "a\trock\nb\tpop\n");
  auto d = load_dataset(s);
  ASSERT_TRUE(d) << render(d.error());
  EXPECT_EQ(d->users, 2u);
  EXPECT_EQ(d->items, 2u);
  EXPECT_EQ(d->matrix.cols, 4u); // a, b, feature:u2, feature:u1
  EXPECT_EQ(d->matrix.rows, 4u); // u1, u2, feature:rock, feature:pop
  EXPECT_EQ(d->col_ids[2], "feature:u2");
  EXPECT_EQ(d->row_ids[2], "feature:rock");
  EXPECT_EQ(d->matrix.nnz(), 6u);
  EXPECT_EQ(d->observed.nnz(), 2u);
}

TEST_F(wals_data_test, AFeatureThatCollidesWithAnIdOfTheMatrixIsAClearError) {
  struct collision_case {
    const char* name;
    bool of_rows;
    const char* says;
  };
  // The matrix has a column and a row named like a feature: "feature:x".
  const collision_case cases[] = {
    {"a row feature against a column", true, "feature 'x' collides with the column id"},
    {"a column feature against a row", false, "feature 'x' collides with the row id"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto s = spec(file("ua.dat", "u1\tfeature:x\t5\nfeature:x\tb\t3\n"), "tsv");
    (c.of_rows ? s.row_features : s.col_features) = file("f.dat", c.of_rows ? "u1\tx\n" : "b\tx\n");
    auto d = load_dataset(s);
    ASSERT_FALSE(d);
    EXPECT_TRUE(is(d.error(), errc::invalid_argument)) << render(d.error());
    EXPECT_NE(render(d.error()).find(c.says), std::string::npos) << render(d.error());
    EXPECT_NE(render(d.error()).find("f.dat:1"), std::string::npos) << render(d.error());
  }
}

TEST_F(wals_data_test, HoldOutIsSeededAndExcludedFromTraining) {
  std::string text;
  for (int u = 0; u < 20; ++u)
    for (int i = 0; i < 10; ++i)
      text += "u" + std::to_string(u) + "\ti" + std::to_string((u + i) % 30) + "\t1\n";
  auto s = spec(file("h.dat", text));
  s.holdout = 0.2f;
  auto a = load_dataset(s);
  auto b = load_dataset(s);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->held_out.nnz(), 40u);
  EXPECT_EQ(a->matrix.nnz(), 160u);
  EXPECT_EQ(a->held_out.indices, b->held_out.indices);
}

TEST_F(wals_data_test, SharedDatasetIsReadOncePerProcessWhileSomeoneHoldsIt) {
  auto path = file("shared.dat", "2\t51\t3\n7\t52\t4\n");
  auto first = load_shared_dataset(spec(path));
  ASSERT_TRUE(first) << render(first.error());
  auto again = load_shared_dataset(spec(path));
  ASSERT_TRUE(again);
  EXPECT_EQ(first->get(), again->get()) << "the same spec was read twice";
  auto other_spec = spec(path);
  other_spec.holdout = 0.5f;
  auto other = load_shared_dataset(other_spec);
  ASSERT_TRUE(other);
  EXPECT_NE(first->get(), other->get());
  // A file that changed is read again.
  std::ofstream{path, std::ios::app} << "9\t53\t5\n";
  auto changed = load_shared_dataset(spec(path));
  ASSERT_TRUE(changed);
  EXPECT_EQ((*changed)->matrix.nnz(), 3u);
  EXPECT_FALSE(load_shared_dataset(spec(file("bad.dat", "oops\n"))));
}

TEST(display_id, FallsBackToTheIndex) {
  EXPECT_EQ(display_id({"x", "y"}, 1), "y");
  EXPECT_EQ(display_id({}, 42), "42");
}

} // namespace
} // namespace darcy::stores
