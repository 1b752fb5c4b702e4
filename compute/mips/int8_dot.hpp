// The inner product of a float query with an int8 code, the scan both int8 indexes run (the
// graph's beam and the live index's lists). AVX-512 where the build targets it.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace darcy::compute::mips {

/// sum_d q[d] * c[d] over `d` values.
inline float dot_codes(const float* q, const int8_t* c, size_t d) {
  size_t i = 0;
  float sum = 0;
#if defined(__AVX512F__)
  __m512 acc = _mm512_setzero_ps();
  for (; i + 16 <= d; i += 16) {
    __m512i wide = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i)));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(wide), _mm512_loadu_ps(q + i), acc);
  }
  sum = _mm512_reduce_add_ps(acc);
#endif
  for (; i < d; ++i)
    sum += q[i] * static_cast<float>(c[i]);
  return sum;
}

} // namespace darcy::compute::mips
