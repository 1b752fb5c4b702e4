// CUDA kernels of a sparsely-gated MoE step: top-k gating, dispatch (rows into expert order),
// one grouped GEMM over every expert's rows, and the gate-weighted combine. Host pointers in
// and out; each call copies to the device, runs and copies back, so that it can be checked
// against its CPU reference in compute/moe (top_k_mask with the renormalised softmax,
// dispatch, the experts' products, combine). Without CUDA or a device every call returns an
// error message and changes nothing; an empty string means success.
#pragma once

#include <string>

namespace darcy::gpu {

/// For each row of `logits` (rows × n, row-major): the k largest logits' columns in descending
/// order (ties: the lower column first) in indices (rows × k), and their softmax over the k in
/// gates (rows × k). Preconditions: 1 ≤ k ≤ min(n, 32).
std::string top_k_gating(const float* logits, int rows, int n, int k, int* indices, float* gates);

/// out (slots × d) row s = x (rows × d) row source[s].
std::string dispatch_rows(const float* x, int rows, int d, const int* source, int slots,
                          float* out);

/// For every expert e: rows offsets[e] .. offsets[e+1]−1 of `in` (slots × d_in) times
/// weights[e] (d_in × d_out, experts stacked one after another) into the same rows of out
/// (slots × d_out). offsets has experts + 1 entries, ascending, from 0 to slots.
std::string grouped_gemm(const float* in, int slots, int d_in, int d_out, const float* weights,
                         const int* offsets, int experts, float* out);

/// y (rows × d) = Σ_s gates[s] · expert_out row s into row target[s]; rows no slot names are 0.
std::string combine_rows(const float* expert_out, int slots, int d, const int* target,
                         const float* gates, int rows, float* y);

} // namespace darcy::gpu
