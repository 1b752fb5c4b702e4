#include "compute/mips/product_quantizer.hpp"

#include <cmath>

#include "compute/mips/fast_scan.hpp"
#include "compute/mips/kmeans.hpp"
#include "compute/parallel.hpp"

namespace darcy::compute::mips {

namespace {

constexpr uint32_t codebook_iterations = 20;
// Passes of coordinate descent over the subspaces in anisotropic encoding.
constexpr int anisotropic_passes = 2;

} // namespace

float anisotropic_eta(float threshold, size_t dim) {
  auto t2 = threshold * threshold;
  return t2 > 0 && t2 < 1 ? static_cast<float>(dim - 1) * t2 / (1 - t2) : 1.0f;
}

product_quantizer::product_quantizer(size_t dim, row_matrix codebooks)
  : dim_(dim), codebooks_(std::move(codebooks)) {
  auto sub = subspaces(), width = dims_per_subspace();
  by_dimension_.resize(sub * width * 16);
  for (size_t m = 0; m < sub; ++m)
    for (size_t c = 0; c < width; ++c)
      for (size_t j = 0; j < 16; ++j)
        by_dimension_[(m * width + c) * 16 + j] =
          codebooks_(static_cast<Eigen::Index>(m * 16 + j), static_cast<Eigen::Index>(c));
}

product_quantizer product_quantizer::train(const row_matrix& sample, size_t dims_per_subspace,
                                           uint64_t seed, uint32_t threads) {
  auto dim = static_cast<size_t>(sample.cols());
  auto subspaces = (dim + dims_per_subspace - 1) / dims_per_subspace;
  row_matrix codebooks = row_matrix::Zero(static_cast<Eigen::Index>(subspaces * 16),
                                          static_cast<Eigen::Index>(dims_per_subspace));
  parallel_ranges(subspaces, threads, [&](size_t, size_t begin, size_t end) {
    for (auto m = begin; m < end; ++m) {
      auto first = static_cast<Eigen::Index>(m * dims_per_subspace);
      auto width =
        std::min<Eigen::Index>(static_cast<Eigen::Index>(dims_per_subspace), sample.cols() - first);
      row_matrix piece = sample.middleCols(first, width);
      auto words =
        kmeans(piece, {.clusters = 16, .iterations = codebook_iterations, .seed = seed + m});
      codebooks.block(static_cast<Eigen::Index>(m * 16), 0, words.rows(), width) = words;
    }
  });
  return product_quantizer{dim, std::move(codebooks)};
}

std::vector<uint8_t> product_quantizer::encode(const row_matrix& vectors,
                                               const row_matrix& directions, float eta,
                                               uint32_t threads) const {
  auto n = static_cast<size_t>(vectors.rows());
  auto sub = subspaces(), width = dims_per_subspace();
  std::vector<uint8_t> codes(n * sub);
  bool anisotropic = eta != 1.0f && directions.rows() == vectors.rows();
  const float* words = codebooks_.data(); // row m * 16 + j: codeword j of subspace m
  parallel_ranges(n, threads, [&](size_t, size_t begin, size_t end) {
    // r: the vector, u: its direction, both zero-padded to whole subspaces.
    std::vector<float> r(sub * width), u(sub * width);
    // The error of codeword j on piece m: its squared length, and its length along u.
    auto error = [&](size_t m, size_t j, float& along) {
      float squared = 0;
      along = 0;
      for (size_t c = 0; c < width; ++c) {
        auto e = r[m * width + c] - words[(m * 16 + j) * width + c];
        squared += e * e;
        along += e * u[m * width + c];
      }
      return squared;
    };
    for (auto i = begin; i < end; ++i) {
      std::fill(r.begin(), r.end(), 0.0f);
      std::fill(u.begin(), u.end(), 0.0f);
      Eigen::Map<Eigen::RowVectorXf>{r.data(), vectors.cols()} =
        vectors.row(static_cast<Eigen::Index>(i));
      if (anisotropic) {
        Eigen::Map<Eigen::RowVectorXf> dir{u.data(), directions.cols()};
        dir = directions.row(static_cast<Eigen::Index>(i));
        if (auto norm = dir.norm(); norm > 0)
          dir /= norm;
      }
      auto* out = codes.data() + i * sub;
      float parallel = 0; // the error along u, summed over the subspaces
      for (size_t m = 0; m < sub; ++m) {
        float best = INFINITY, along = 0, best_along = 0;
        for (size_t j = 0; j < 16; ++j)
          if (auto sq = error(m, j, along); sq < best) {
            best = sq;
            best_along = along;
            out[m] = static_cast<uint8_t>(j);
          }
        parallel += best_along;
      }
      // Coordinate descent on |e|^2 + (eta - 1) (e . u)^2, one subspace at a time.
      for (int pass = 0; anisotropic && pass < anisotropic_passes; ++pass) {
        for (size_t m = 0; m < sub; ++m) {
          float along = 0;
          error(m, out[m], along);
          auto rest = parallel - along;
          float best = INFINITY;
          for (size_t j = 0; j < 16; ++j) {
            auto sq = error(m, j, along);
            auto loss = sq + (eta - 1) * (rest + along) * (rest + along);
            if (loss < best) {
              best = loss;
              out[m] = static_cast<uint8_t>(j);
              parallel = rest + along;
            }
          }
        }
      }
    }
  });
  return codes;
}

Eigen::VectorXf product_quantizer::decode(std::span<const uint8_t> codes) const {
  auto width = static_cast<Eigen::Index>(dims_per_subspace());
  Eigen::VectorXf v(static_cast<Eigen::Index>(subspaces()) * width);
  for (size_t m = 0; m < subspaces(); ++m)
    v.segment(static_cast<Eigen::Index>(m) * width, width) =
      codebooks_.row(static_cast<Eigen::Index>(m * 16 + codes[m])).transpose();
  return v.head(static_cast<Eigen::Index>(dim_));
}

std::vector<float> product_quantizer::inner_product_table(std::span<const float> query) const {
  auto sub = subspaces(), width = dims_per_subspace();
  std::vector<float> table(sub * codes_per_subspace, 0.0f);
  for (size_t m = 0; m < sub; ++m) {
    auto* out = table.data() + m * 16;
    for (size_t c = 0; c < width && m * width + c < dim_; ++c) {
      auto x = query[m * width + c];
      const auto* words = by_dimension_.data() + (m * width + c) * 16;
      for (size_t j = 0; j < 16; ++j)
        out[j] += x * words[j];
    }
  }
  return table;
}

} // namespace darcy::compute::mips
