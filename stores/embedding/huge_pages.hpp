// Memory for large random-access structures (a store's index and row chunks): allocations of
// 2 MiB or more are 2 MiB-aligned mappings of their own that ask for transparent huge pages, so
// that random access over gigabytes costs few TLB misses. Smaller ones come from malloc.
//
//   std::vector<slot, stores::huge_page_allocator<slot>> index(1 << 24);
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace darcy::stores {

inline constexpr size_t huge_page_bytes = size_t{2} << 20;

/// At least `bytes` bytes (a multiple of huge_page_bytes, huge pages requested, when `bytes` is
/// at least that), zeroed when that large; throws std::bad_alloc when the system has none.
/// Release with free_huge_pages and the same `bytes`.
void* allocate_huge_pages(size_t bytes);
void free_huge_pages(void* p, size_t bytes);

/// Asks for huge pages for the 2 MiB-aligned interior of [p, p + bytes): for the pages not yet
/// touched (MADV_HUGEPAGE, before a buffer is filled), and with `collapse` for those already
/// there too (MADV_COLLAPSE copies them now). A hint: nothing happens where the kernel cannot.
void advise_huge_pages(void* p, size_t bytes, bool collapse = false);

/// Sizes `v`, empty, to n zero values on huge pages where the kernel gives them.
template <class T, class A>
void assign_on_huge_pages(std::vector<T, A>& v, size_t n) {
  v.clear();
  v.shrink_to_fit();
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
  v.resize(n);
}

template <class T>
struct huge_page_allocator {
  using value_type = T;

  huge_page_allocator() = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) {}

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T))
      throw std::bad_array_new_length{};
    return static_cast<T*>(allocate_huge_pages(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { free_huge_pages(p, n * sizeof(T)); }

  template <class U>
  bool operator==(const huge_page_allocator<U>&) const {
    return true;
  }
};

} // namespace darcy::stores
