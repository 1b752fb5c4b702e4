#include "stores/data/wals_csr.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/data/wals_data.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

class wals_csr_test : public ::testing::Test {
protected:
  test::temp_dir tmp_{"wals_csr"};
  /// Not there yet: each test writes it.
  fs::path dir_{fs::path{tmp_.path()} / "matrix"};
};

TEST_F(wals_csr_test, SyntheticDirectoryHoldsTheMatrixAndItsTransposeWhateverTheThreads) {
  for (uint32_t threads : {1u, 3u}) {
    compute::synthetic_spec spec{.rows = 300, .cols = 170, .nnz = 5000, .seed = 9};
    auto expected = compute::synthetic_matrix(spec);
    ASSERT_TRUE(expected);
    spec.threads = threads;
    // A budget of 40 entries: the transpose is written in many column ranges.
    ASSERT_FALSE(write_synthetic_csr(spec, dir_.string(), 12 * 40));
    auto sides = open_wals_csr(dir_.string());
    ASSERT_TRUE(sides) << render(sides.error());
    auto rows = sides->rows->read_rows(0, 300);
    auto cols = sides->cols->read_rows(0, 170);
    ASSERT_TRUE(rows && cols);
    EXPECT_EQ(rows->offsets, expected->offsets) << threads;
    EXPECT_EQ(rows->indices, expected->indices) << threads;
    EXPECT_EQ(rows->values, expected->values) << threads;
    auto t = compute::transpose(*expected);
    EXPECT_EQ(cols->offsets, t.offsets);
    EXPECT_EQ(cols->indices, t.indices);
    EXPECT_EQ(cols->values, t.values);
  }
}

TEST_F(wals_csr_test, LoadDatasetReadsADirectoryWholeAndRefusesFeaturesOnIt) {
  compute::synthetic_spec spec{.rows = 40, .cols = 30, .nnz = 300, .seed = 2};
  ASSERT_FALSE(write_synthetic_csr(spec, dir_.string(), 1 << 20));
  wals_data_spec s;
  s.format = "csr";
  s.path = dir_.string();
  auto d = load_dataset(s);
  ASSERT_TRUE(d) << render(d.error());
  auto expected = compute::synthetic_matrix(spec);
  EXPECT_EQ(d->matrix.indices, expected->indices);
  EXPECT_EQ(d->users, 40u);
  EXPECT_EQ(d->items, 30u);
  s.col_features = (dir_ / "genres.tsv").string();
  auto refused = load_dataset(s);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::invalid_argument)) << render(refused.error());
}

TEST_F(wals_csr_test, SidesOfDifferentMatricesOrAMissingSideAreRefused) {
  auto other = dir_ / "other";
  ASSERT_FALSE(
    write_synthetic_csr({.rows = 40, .cols = 30, .nnz = 300, .seed = 2}, dir_.string(), 1 << 20));
  ASSERT_FALSE(
    write_synthetic_csr({.rows = 40, .cols = 31, .nnz = 300, .seed = 2}, other.string(), 1 << 20));
  fs::copy_file(other / "cols.csr", dir_ / "cols.csr", fs::copy_options::overwrite_existing);
  auto mixed = open_wals_csr(dir_.string());
  ASSERT_FALSE(mixed);
  EXPECT_TRUE(is(mixed.error(), errc::corrupt_file)) << render(mixed.error());
  EXPECT_NE(render(mixed.error()).find("not the transpose"), std::string::npos);
  fs::remove(dir_ / "cols.csr");
  auto missing = open_wals_csr(dir_.string());
  ASSERT_FALSE(missing);
  EXPECT_TRUE(is(missing.error(), errc::not_found)) << render(missing.error());
}

} // namespace
} // namespace darcy::stores
