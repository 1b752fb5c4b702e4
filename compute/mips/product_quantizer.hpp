// Product quantization with 4-bit codes for inner-product search: a vector is cut into
// subspaces of a few dimensions, and each piece is replaced by the nearest of 16 codewords of
// its subspace. Encoding may weigh the error along the encoded point's own direction more than
// the error across it (ScaNN's anisotropic loss): that error is what changes inner products
// with the queries that score the point highest.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compute/top_k.hpp"

namespace darcy::compute::mips {

/// The ratio eta = h_parallel / h_orthogonal of ScaNN's anisotropic loss for threshold T in
/// dimension d: (d - 1) T^2 / (1 - T^2); 1 (plain squared error) for T = 0.
float anisotropic_eta(float threshold, size_t dim);

class product_quantizer {
public:
  product_quantizer() = default;

  /// Codebooks for vectors of dimension `dim` cut into pieces of `dims_per_subspace` (the last
  /// piece may be shorter), each trained by k-means over the pieces of `sample`.
  /// Preconditions: sample.cols() == dim, sample.rows() >= 16, dims_per_subspace >= 1.
  static product_quantizer train(const row_matrix& sample, size_t dims_per_subspace, uint64_t seed,
                                 uint32_t threads = 1);

  /// Rebuilds a trained quantizer from its codebooks (subspaces * 16 rows of
  /// dims_per_subspace, zero past `dim`).
  product_quantizer(size_t dim, row_matrix codebooks);

  size_t dim() const { return dim_; }
  size_t dims_per_subspace() const { return static_cast<size_t>(codebooks_.cols()); }
  size_t subspaces() const { return static_cast<size_t>(codebooks_.rows()) / 16; }
  const row_matrix& codebooks() const { return codebooks_; }

  /// The codes (item-major, one byte per subspace) of `vectors`. `directions` (same shape, or
  /// empty) gives each vector the point whose direction the anisotropic loss uses, with weight
  /// `eta` on the error along it; eta = 1 or no directions: nearest codewords.
  std::vector<uint8_t> encode(const row_matrix& vectors, const row_matrix& directions, float eta,
                              uint32_t threads = 1) const;

  /// The vector that `codes` (subspaces() bytes) stand for.
  Eigen::VectorXf decode(std::span<const uint8_t> codes) const;

  /// table[m * 16 + j] = the inner product of `query`'s piece m with codeword j of subspace m.
  std::vector<float> inner_product_table(std::span<const float> query) const;

private:
  size_t dim_ = 0;
  row_matrix codebooks_;
  /// codebooks_ by dimension: [(m * width + c) * 16 + j] = codebooks_(m * 16 + j, c), so that a
  /// query coordinate multiplies 16 contiguous codeword values.
  std::vector<float> by_dimension_;
};

} // namespace darcy::compute::mips
