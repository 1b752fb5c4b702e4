#include "stores/row_chunks.hpp"

#include <cstdlib>
#include <new>

#include <sys/mman.h>

namespace darcy::stores {

namespace {

constexpr size_t huge_page = size_t{2} << 20;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

} // namespace

void row_chunks::free_deleter::operator()(std::byte* p) const {
  std::free(p);
}

row_chunks::row_chunks(size_t row_bytes)
  : row_bytes_(row_bytes),
    rows_per_chunk_(row_bytes <= huge_page ? huge_page / row_bytes : 1),
    chunk_bytes_(round_up(rows_per_chunk_ * row_bytes, row_bytes <= huge_page ? huge_page : 4096)) {
}

void row_chunks::grow() {
  auto* p = static_cast<std::byte*>(std::aligned_alloc(huge_page, chunk_bytes_));
  if (p == nullptr)
    throw std::bad_alloc{};
  ::madvise(p, chunk_bytes_, MADV_HUGEPAGE);
  chunks_.emplace_back(p);
}

} // namespace darcy::stores
