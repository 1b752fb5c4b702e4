#include "stores/embedding/row_chunks.hpp"

#include "stores/embedding/huge_pages.hpp"

namespace darcy::stores {

namespace {

constexpr size_t huge_page = huge_page_bytes;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

} // namespace

void row_chunks::free_deleter::operator()(std::byte* p) const {
  free_huge_pages(p, bytes);
}

row_chunks::row_chunks(size_t row_bytes)
  : row_bytes_(row_bytes),
    rows_per_chunk_(row_bytes <= huge_page ? huge_page / row_bytes : 1),
    chunk_bytes_(round_up(rows_per_chunk_ * row_bytes, row_bytes <= huge_page ? huge_page : 4096)) {
}

void row_chunks::grow() {
  chunks_.emplace_back(static_cast<std::byte*>(allocate_huge_pages(chunk_bytes_)),
                       free_deleter{chunk_bytes_});
}

} // namespace darcy::stores
