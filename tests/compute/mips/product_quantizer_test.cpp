#include "compute/mips/product_quantizer.hpp"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "tests/support/random_matrix.hpp"

namespace darcy::compute::mips {
namespace {

using test::gaussian_matrix;

TEST(anisotropic_eta, follows_scann_formula) {
  EXPECT_FLOAT_EQ(anisotropic_eta(0.0f, 64), 1.0f);
  EXPECT_NEAR(anisotropic_eta(0.2f, 64), 63 * 0.04 / 0.96, 1e-5);
  EXPECT_NEAR(anisotropic_eta(0.5f, 5), 4 * 0.25 / 0.75, 1e-5);
}

TEST(product_quantizer, encodes_a_codeword_concatenation_exactly_for_every_width) {
  for (size_t width : {1u, 2u, 3u}) {
    auto sample = gaussian_matrix(500, 7, width); // a short last subspace
    auto pq = product_quantizer::train(sample, width, 4, 2);
    ASSERT_EQ(pq.subspaces(), (7 + width - 1) / width);
    std::vector<uint8_t> chosen(pq.subspaces());
    for (size_t m = 0; m < chosen.size(); ++m)
      chosen[m] = static_cast<uint8_t>((m * 5 + 3) % 16);
    row_matrix v = pq.decode(chosen).transpose();
    auto codes = pq.encode(v, {}, 1.0f);
    EXPECT_EQ(codes, chosen) << "width " << width;
  }
}

TEST(product_quantizer, table_sums_are_inner_products_with_the_decoded_vector) {
  auto pq = product_quantizer::train(gaussian_matrix(400, 9, 1), 2, 1);
  auto query = gaussian_matrix(1, 9, 2);
  auto table = pq.inner_product_table({query.data(), 9});
  auto codes = pq.encode(gaussian_matrix(5, 9, 3), {}, 1.0f);
  for (size_t i = 0; i < 5; ++i) {
    std::span<const uint8_t> mine{codes.data() + i * pq.subspaces(), pq.subspaces()};
    float sum = 0;
    for (size_t m = 0; m < pq.subspaces(); ++m)
      sum += table[m * 16 + mine[m]];
    EXPECT_NEAR(sum, query.row(0).dot(pq.decode(mine).transpose()), 1e-4f);
  }
}

TEST(product_quantizer, anisotropic_encoding_trades_orthogonal_error_for_parallel_error) {
  auto points = gaussian_matrix(2000, 16, 7);
  auto pq = product_quantizer::train(points, 2, 3);
  auto errors = [&](float eta) {
    auto codes = pq.encode(points, points, eta, 2);
    double along = 0, total = 0;
    for (Eigen::Index i = 0; i < points.rows(); ++i) {
      Eigen::RowVectorXf e =
        points.row(i) - pq.decode({codes.data() + i * pq.subspaces(), pq.subspaces()}).transpose();
      auto a = e.dot(points.row(i).normalized());
      along += a * a;
      total += e.squaredNorm();
    }
    return std::pair{along, total};
  };
  auto [along_plain, total_plain] = errors(1.0f);
  auto [along_aniso, total_aniso] = errors(anisotropic_eta(0.5f, 16)); // eta 5
  EXPECT_LT(along_aniso, 0.7 * along_plain);
  EXPECT_GT(total_aniso, total_plain); // nearest codewords minimise the plain error
}

} // namespace
} // namespace darcy::compute::mips
