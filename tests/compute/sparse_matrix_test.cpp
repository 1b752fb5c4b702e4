#include "compute/sparse_matrix.hpp"

#include <gtest/gtest.h>

#include "compute/synthetic_matrix.hpp"
#include "messages/errc.hpp"

namespace darcy::compute {
namespace {

TEST(from_triples, SortsAndSumsDuplicates) {
  auto m = from_triples(3, 4, {{2, 1, 1}, {0, 3, 2}, {0, 1, 3}, {2, 1, 4}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->offsets, (std::vector<uint64_t>{0, 2, 2, 3}));
  EXPECT_EQ(m->indices, (std::vector<uint32_t>{1, 3, 1}));
  EXPECT_EQ(m->values, (std::vector<float>{3, 2, 5}));
}

TEST(from_triples, RejectsEntriesOutsideTheShape) {
  EXPECT_TRUE(is(error_of(from_triples(2, 2, {{2, 0, 1}})), errc::invalid_argument));
  EXPECT_TRUE(is(error_of(from_triples(2, 2, {{0, 2, 1}})), errc::invalid_argument));
}

TEST(transpose, TwiceGivesTheMatrixBack) {
  auto m = *synthetic_matrix({50, 40, 400, 3});
  auto t = transpose(m);
  EXPECT_EQ(t.rows, m.cols);
  EXPECT_EQ(t.nnz(), m.nnz());
  auto back = transpose(t);
  EXPECT_EQ(back.offsets, m.offsets);
  EXPECT_EQ(back.indices, m.indices);
  EXPECT_EQ(back.values, m.values);
}

TEST(slice_rows, KeepsTheRowsAndColumns) {
  auto m = *from_triples(4, 3, {{0, 0, 1}, {1, 2, 2}, {2, 1, 3}, {3, 0, 4}});
  auto s = slice_rows(m, 1, 3);
  EXPECT_EQ(s.rows, 2u);
  EXPECT_EQ(s.indices, (std::vector<uint32_t>{2, 1}));
  EXPECT_EQ(s.values, (std::vector<float>{2, 3}));
}

TEST(synthetic_matrix, SameMatrixForAnyThreadCount) {
  synthetic_spec one{1000, 500, 20000, 9};
  auto two = one;
  two.threads = 2;
  auto a = *synthetic_matrix(one);
  auto b = *synthetic_matrix(two);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.values, b.values);
  EXPECT_GT(a.nnz(), 15000u);
  EXPECT_LE(a.nnz(), 21000u);
}

TEST(synthetic_matrix, PopularColumnsFollowZipf) {
  auto m = *synthetic_matrix({2000, 1000, 40000, 2});
  auto t = transpose(m);
  std::vector<uint64_t> sizes;
  for (uint64_t c = 0; c < t.rows; ++c)
    sizes.push_back(t.row_size(c));
  std::sort(sizes.rbegin(), sizes.rend());
  EXPECT_GT(sizes[0], 20 * std::max<uint64_t>(sizes[500], 1));
}

TEST(synthetic_matrix, RejectsEmptyShapes) {
  EXPECT_TRUE(is(error_of(synthetic_matrix({0, 5, 5, 1})), errc::invalid_argument));
  EXPECT_TRUE(is(error_of(synthetic_matrix({5, 0, 5, 1})), errc::invalid_argument));
  EXPECT_TRUE(is(error_of(synthetic_matrix({5, 5, 4, 1})), errc::invalid_argument));
}

} // namespace
} // namespace darcy::compute
