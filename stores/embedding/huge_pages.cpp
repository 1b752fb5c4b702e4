#include "stores/embedding/huge_pages.hpp"

#include <cstdint>
#include <cstdlib>

#include <sys/mman.h>

namespace darcy::stores {

namespace {

size_t rounded(size_t bytes) {
  return (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
}

} // namespace

void* allocate_huge_pages(size_t bytes) {
  if (bytes < huge_page_bytes) {
    if (auto* p = std::malloc(bytes == 0 ? 1 : bytes))
      return p;
    throw std::bad_alloc{};
  }
  // Mapped apart from malloc's heap, an aligned window cut out of a larger mapping: freed, the
  // pages go back to the system, and no later small allocation lands in a region marked for
  // huge pages (where touching 4 KiB makes 2 MiB resident).
  auto size = rounded(bytes);
  auto span = size + huge_page_bytes;
  auto* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    throw std::bad_alloc{};
  auto start = reinterpret_cast<uintptr_t>(raw);
  auto aligned = (start + huge_page_bytes - 1) & ~(uintptr_t{huge_page_bytes} - 1);
  if (aligned > start)
    ::munmap(raw, aligned - start);
  if (auto end = aligned + size; start + span > end)
    ::munmap(reinterpret_cast<void*>(end), start + span - end);
  ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void free_huge_pages(void* p, size_t bytes) {
  if (p == nullptr)
    return;
  if (bytes < huge_page_bytes)
    std::free(p);
  else
    ::munmap(p, rounded(bytes));
}

} // namespace darcy::stores

namespace darcy::stores {

void advise_huge_pages(void* p, size_t bytes, bool collapse) {
#ifndef MADV_COLLAPSE
  constexpr int MADV_COLLAPSE = 25; // Linux 6.1; older kernels refuse it
#endif
  auto start = reinterpret_cast<uintptr_t>(p);
  auto first = (start + huge_page_bytes - 1) & ~(uintptr_t{huge_page_bytes} - 1);
  auto last = (start + bytes) & ~(uintptr_t{huge_page_bytes} - 1);
  if (p == nullptr || last <= first)
    return;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  if (collapse)
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_COLLAPSE);
}

} // namespace darcy::stores
