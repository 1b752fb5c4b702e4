// Fixed-size row storage in large chunks: a row's address never changes while the store lives,
// and chunks are 2 MiB-aligned multiples of 2 MiB with transparent huge pages requested, so that
// random row access over gigabytes costs few TLB misses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace darcy::stores {

class row_chunks {
public:
  /// `row_bytes` must be a positive multiple of 8.
  explicit row_chunks(size_t row_bytes);

  size_t row_bytes() const { return row_bytes_; }

  /// The bytes of row `row`, which must be below rows().
  std::byte* at(uint32_t row) const {
    return chunks_[row / rows_per_chunk_].get() + (row % rows_per_chunk_) * row_bytes_;
  }

  /// Rows that have storage; grow() adds one chunk, shrink(n) frees all but the first n.
  size_t rows() const { return chunks_.size() * rows_per_chunk_; }
  size_t rows_per_chunk() const { return rows_per_chunk_; }
  size_t chunks() const { return chunks_.size(); }
  void grow();
  void shrink(size_t chunks) {
    if (chunks < chunks_.size())
      chunks_.resize(chunks);
  }

  /// Bytes allocated for rows.
  size_t bytes() const { return chunks_.size() * chunk_bytes_; }

private:
  struct free_deleter {
    size_t bytes = 0;
    void operator()(std::byte* p) const;
  };

  size_t row_bytes_;
  size_t rows_per_chunk_;
  size_t chunk_bytes_;
  std::vector<std::unique_ptr<std::byte[], free_deleter>> chunks_;
};

} // namespace darcy::stores
