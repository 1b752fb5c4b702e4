// Launchers of the MoE kernels that gpu/moe_kernels.cu and gpu/moe_layer.cu share. Every
// pointer is a device pointer; each call queues its kernel on the default stream and returns
// at once (errors surface at the next synchronisation). Internal to gpu/.
#pragma once

#include <cstddef>

namespace darcy::gpu::kernels {

/// The largest k the top-k kernels take.
constexpr int max_k = 32;

/// Blocks of `threads` threads that cover `n` items.
inline unsigned blocks_for(size_t n, unsigned threads = 256) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

/// Per row of logits (rows × n): the k largest columns in descending order (ties: the lower
/// column first) into indices (rows × k) and their softmax over the k into gates (rows × k).
/// Either output may be null; `dense`, when not null (rows × n), receives the same gates with
/// zeros elsewhere. Precondition: 1 ≤ k ≤ min(n, max_k).
void top_k(const float* logits, int rows, int n, int k, int* indices, float* gates, float* dense);

/// out row s (slots × d) = x row source[s].
void gather_rows(const float* x, int d, const int* source, int slots, float* out);

/// y row target[s] += weights[s] · in row s (weights null: 1). y must be zeroed by the
/// caller where nothing else is to be added.
void scatter_add_rows(const float* in, int slots, int d, const int* target, const float* weights,
                      float* y);

} // namespace darcy::gpu::kernels
