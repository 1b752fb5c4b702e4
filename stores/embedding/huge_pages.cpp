#include "stores/embedding/huge_pages.hpp"

#include <cstdlib>

#include <sys/mman.h>

namespace darcy::stores {

void* allocate_huge_pages(size_t bytes) {
  if (bytes < huge_page_bytes) {
    if (auto* p = std::malloc(bytes == 0 ? 1 : bytes))
      return p;
    throw std::bad_alloc{};
  }
  auto rounded = (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  auto* p = std::aligned_alloc(huge_page_bytes, rounded);
  if (p == nullptr)
    throw std::bad_alloc{};
  ::madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

void free_huge_pages(void* p) {
  std::free(p);
}

} // namespace darcy::stores
