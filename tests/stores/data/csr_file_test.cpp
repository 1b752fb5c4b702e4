#include "stores/data/csr_file.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>

#include "compute/synthetic_matrix.hpp"
#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

class csr_file_test : public ::testing::Test {
protected:
  void SetUp() override {
    auto m = compute::synthetic_matrix({.rows = 120, .cols = 90, .nnz = 1500, .seed = 3});
    ASSERT_TRUE(m);
    matrix_ = std::move(*m);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  test::temp_dir tmp_{"csr_file"};
  fs::path dir_{tmp_.path()};
  compute::csr_matrix matrix_;
};

void expect_equal(const compute::csr_matrix& a, const compute::csr_matrix& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.values, b.values);
}

TEST_F(csr_file_test, ReadsBackAnyRangeOfRowsAsWritten) {
  ASSERT_FALSE(write_csr_file(path("m.csr"), matrix_));
  auto f = csr_file::open(path("m.csr"));
  ASSERT_TRUE(f) << render(f.error());
  EXPECT_EQ((*f)->rows(), matrix_.rows);
  EXPECT_EQ((*f)->cols(), matrix_.cols);
  EXPECT_EQ((*f)->nnz(), matrix_.nnz());
  EXPECT_EQ((*f)->offsets(), matrix_.offsets);
  EXPECT_EQ((*f)->largest(), *std::max_element(matrix_.values.begin(), matrix_.values.end()));
  struct {
    uint64_t begin, end;
  } ranges[] = {{0, 120}, {0, 1}, {37, 38}, {50, 50}, {119, 120}, {10, 77}};
  for (auto& r : ranges) {
    auto rows = (*f)->read_rows(r.begin, r.end);
    ASSERT_TRUE(rows) << render(rows.error());
    expect_equal(*rows, compute::slice_rows(matrix_, r.begin, r.end));
  }
  auto past = (*f)->read_rows(100, 121);
  ASSERT_FALSE(past);
  EXPECT_TRUE(is(past.error(), errc::invalid_argument)) << render(past.error());
}

// A worker reads block after block into one matrix; entries are read half a million at a time.
// Neither may change what a read returns.
TEST_F(csr_file_test, ReadsIntoAReusedMatrixEqualFreshReadsAcrossReadSlices) {
  auto big = compute::synthetic_matrix({.rows = 2000, .cols = 50000, .nnz = 2'400'000, .seed = 5});
  ASSERT_TRUE(big);
  ASSERT_GT(big->nnz(), uint64_t{1} << 20); // more than two slices
  ASSERT_FALSE(write_csr_file(path("big.csr"), *big));
  auto f = csr_file::open(path("big.csr"));
  ASSERT_TRUE(f) << render(f.error());
  compute::csr_matrix reused;
  struct {
    uint64_t begin, end;
  } ranges[] = {{0, 2000}, {3, 4}, {500, 1500}, {1999, 2000}, {0, 2000}, {700, 700}};
  for (auto& r : ranges) {
    SCOPED_TRACE(std::to_string(r.begin) + ".." + std::to_string(r.end));
    ASSERT_FALSE((*f)->read_rows(r.begin, r.end, reused));
    expect_equal(reused, compute::slice_rows(*big, r.begin, r.end));
  }
}

TEST_F(csr_file_test, DamagedFilesAreRefusedNamingTheFile) {
  ASSERT_FALSE(write_csr_file(path("m.csr"), matrix_));
  auto size = fs::file_size(path("m.csr"));
  struct {
    const char* what;
    void (*damage)(const std::string& file, uintmax_t size);
    errc expected;
  } cases[] = {
    {"truncated", [](const std::string& p, uintmax_t n) { fs::resize_file(p, n - 5); },
     errc::corrupt_file},
    {"bytes appended",
     [](const std::string& p, uintmax_t) {
       std::ofstream{p, std::ios::app} << "x";
     },
     errc::corrupt_file},
    {"header only",
     [](const std::string& p, uintmax_t) { fs::resize_file(p, csr_file_header_bytes); },
     errc::corrupt_file},
    {"not ours", [](const std::string& p, uintmax_t) { std::ofstream{p} << "row\tcol\tvalue\n"; },
     errc::corrupt_file},
    {"missing", [](const std::string& p, uintmax_t) { fs::remove(p); }, errc::not_found},
  };
  for (auto& c : cases) {
    ASSERT_FALSE(write_csr_file(path("m.csr"), matrix_));
    c.damage(path("m.csr"), size);
    auto f = csr_file::open(path("m.csr"));
    ASSERT_FALSE(f) << c.what;
    EXPECT_TRUE(is(f.error(), c.expected)) << c.what << ": " << render(f.error());
    EXPECT_NE(render(f.error()).find("m.csr"), std::string::npos) << render(f.error());
  }
}

TEST_F(csr_file_test, AnEntryDamagedInPlaceFailsTheReadOfItsRowOnly) {
  ASSERT_FALSE(write_csr_file(path("m.csr"), matrix_));
  // Row 5's first column becomes one past the last.
  {
    std::fstream f{path("m.csr"), std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(static_cast<std::streamoff>(csr_file_header_bytes + matrix_.offsets[5] * 8));
    auto bad = static_cast<uint32_t>(matrix_.cols);
    f.write(reinterpret_cast<const char*>(&bad), sizeof bad);
  }
  auto f = csr_file::open(path("m.csr"));
  ASSERT_TRUE(f) << render(f.error());
  auto rows = (*f)->read_rows(0, 10);
  ASSERT_FALSE(rows);
  EXPECT_TRUE(is(rows.error(), errc::corrupt_file)) << render(rows.error());
  EXPECT_NE(render(rows.error()).find("row 5"), std::string::npos) << render(rows.error());
  EXPECT_TRUE((*f)->read_rows(6, 120)) << "the other rows still read";
}

TEST_F(csr_file_test, WriterRefusesBadRowsAndAnUnfinishedCount) {
  auto nan = std::numeric_limits<float>::quiet_NaN();
  struct {
    const char* what;
    std::vector<std::pair<uint32_t, float>> row;
  } cases[] = {
    {"column out of range", {{3, 1.0f}, {10, 1.0f}}},
    {"columns out of order", {{4, 1.0f}, {2, 1.0f}}},
    {"a column twice", {{4, 1.0f}, {4, 2.0f}}},
    {"a value not finite", {{1, nan}}},
  };
  for (auto& c : cases) {
    auto w = csr_file_writer::create(path("w.csr"), 2, 10);
    ASSERT_TRUE(w);
    auto err = w->add_row(c.row);
    EXPECT_TRUE(is(err, errc::invalid_argument)) << c.what << ": " << render(err);
  }
  auto w = csr_file_writer::create(path("w.csr"), 2, 10);
  ASSERT_TRUE(w);
  ASSERT_FALSE(w->add_row({{1, 2.0f}}));
  auto err = w->finish();
  EXPECT_TRUE(is(err, errc::invalid_argument)) << "one row of two: " << render(err);
  auto extra = csr_file_writer::create(path("x.csr"), 1, 10);
  ASSERT_TRUE(extra);
  ASSERT_FALSE(extra->add_row({}));
  EXPECT_TRUE(is(extra->add_row({}), errc::invalid_argument)) << "a row past the count";
  ASSERT_FALSE(extra->finish());
  auto empty_row = csr_file::open(path("x.csr"));
  ASSERT_TRUE(empty_row) << render(empty_row.error());
  EXPECT_EQ((*empty_row)->nnz(), 0u);
}

TEST_F(csr_file_test, TransposeEqualsTheInMemoryOneWhateverTheBudget) {
  ASSERT_FALSE(write_csr_file(path("m.csr"), matrix_));
  auto f = csr_file::open(path("m.csr"));
  ASSERT_TRUE(f);
  auto expected = compute::transpose(matrix_);
  // 12 bytes an entry: a column a range, a few columns a range, everything at once.
  for (uint64_t budget : {uint64_t{1}, uint64_t{12 * 60}, uint64_t{1} << 30}) {
    ASSERT_FALSE(transpose_csr_file(**f, path("t.csr"), budget)) << budget;
    auto t = csr_file::open(path("t.csr"));
    ASSERT_TRUE(t) << render(t.error());
    auto all = (*t)->read_rows(0, (*t)->rows());
    ASSERT_TRUE(all);
    expect_equal(*all, expected);
  }
}

} // namespace
} // namespace darcy::stores
