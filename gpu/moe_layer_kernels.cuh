// The kernels of the GPU MoE layer (gpu/moe_layer.cu), each the device twin of a compute/moe
// step: softmax and batchwise masks, the plan, bias and ReLU backward, the combine's backward,
// the gate's backward, noisy logits and the load loss, and the balance loss's CV². Included by
// moe_layer.cu alone; compiled by nvcc only.
#pragma once

#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

#include <cmath>

#include "gpu/kernels.cuh"

namespace darcy::gpu::layer_kernels {

/// Threads per block of every kernel here (the block scans are sized by it).
constexpr int block_threads = 256;

__global__ void softmax_rows_kernel(const float* logits, int rows, int n, float* probs) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float* l = logits + static_cast<size_t>(r) * n;
  float* p = probs + static_cast<size_t>(r) * n;
  float top = -INFINITY, sum = 0;
  for (int c = 0; c < n; ++c)
    top = fmaxf(top, l[c]);
  for (int c = 0; c < n; ++c)
    sum += p[c] = expf(l[c] - top);
  for (int c = 0; c < n; ++c)
    p[c] /= sum;
}

// One block per expert (column e): 1 at the m largest probabilities of the column, ties to
// the lower row. Probabilities are ≥ 0, so their bit patterns order like their values: the
// m-th largest is found bit by bit, counting the rows at or above each candidate.
__global__ void batchwise_mask_kernel(const float* probs, int rows, int n, int m, float* mask) {
  using scan = cub::BlockScan<int, block_threads>;
  __shared__ typename scan::TempStorage temp;
  __shared__ int taken_ties;
  int e = blockIdx.x;
  auto bits_at = [&](int r) { return __float_as_uint(probs[static_cast<size_t>(r) * n + e]); };
  unsigned kth = 0;
  for (int bit = 31; bit >= 0; --bit) {
    unsigned candidate = kth | (1u << bit);
    int count = 0;
    for (int base = 0; base < rows; base += block_threads) {
      int r = base + threadIdx.x;
      count += __syncthreads_count(r < rows && bits_at(r) >= candidate);
    }
    if (count >= m)
      kth = candidate;
  }
  int above = 0;
  for (int base = 0; base < rows; base += block_threads) {
    int r = base + threadIdx.x;
    above += __syncthreads_count(r < rows && bits_at(r) > kth);
  }
  int ties_wanted = m - above;
  if (threadIdx.x == 0)
    taken_ties = 0;
  __syncthreads();
  for (int base = 0; base < rows; base += block_threads) {
    int r = base + threadIdx.x;
    unsigned bits = r < rows ? bits_at(r) : 0u;
    int tie = r < rows && bits == kth;
    int before = 0;
    scan(temp).ExclusiveSum(tie, before);
    bool take = r < rows && (bits > kth || (tie && taken_ties + before < ties_wanted));
    if (r < rows)
      mask[static_cast<size_t>(r) * n + e] = take ? 1.0f : 0.0f;
    int ties = __syncthreads_count(tie);
    if (threadIdx.x == 0)
      taken_ties += ties;
    __syncthreads();
  }
}

// G = M ⊙ e^{l − max} / Σ M ⊙ e^{l − max} per row; rows with an empty mask stay 0.
__global__ void masked_softmax_kernel(const float* logits, const float* mask, int rows, int n,
                                      float* gates) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  size_t at = static_cast<size_t>(r) * n;
  float top = -INFINITY, sum = 0;
  for (int c = 0; c < n; ++c)
    if (mask[at + c] > 0)
      top = fmaxf(top, logits[at + c]);
  for (int c = 0; c < n; ++c)
    sum += gates[at + c] = mask[at + c] > 0 ? expf(logits[at + c] - top) : 0.0f;
  if (sum > 0)
    for (int c = 0; c < n; ++c)
      gates[at + c] /= sum;
}

// One block per expert: how many rows have a non-zero gate there.
__global__ void count_kernel(const float* gates, int rows, int n, int* counts) {
  int e = blockIdx.x, count = 0;
  for (int base = 0; base < rows; base += block_threads) {
    int r = base + threadIdx.x;
    count += __syncthreads_count(r < rows && gates[static_cast<size_t>(r) * n + e] != 0);
  }
  if (threadIdx.x == 0)
    counts[e] = count;
}

// One block per expert: its slots, from offsets[e], in row order (the CPU plan's order).
__global__ void fill_plan_kernel(const float* gates, int rows, int n, const int* offsets,
                                 int* slot_row, float* slot_gate, int* slot_expert) {
  using scan = cub::BlockScan<int, block_threads>;
  __shared__ typename scan::TempStorage temp;
  __shared__ int filled;
  int e = blockIdx.x;
  if (threadIdx.x == 0)
    filled = 0;
  __syncthreads();
  for (int base = 0; base < rows; base += block_threads) {
    int r = base + threadIdx.x;
    float g = r < rows ? gates[static_cast<size_t>(r) * n + e] : 0.0f;
    int here = g != 0;
    int before = 0;
    scan(temp).ExclusiveSum(here, before);
    if (here) {
      int s = offsets[e] + filled + before;
      slot_row[s] = r;
      slot_gate[s] = g;
      slot_expert[s] = e;
    }
    int added = __syncthreads_count(here);
    if (threadIdx.x == 0)
      filled += added;
    __syncthreads();
  }
}

// a[s, c] += bias[slot_expert[s], c], then max(·, 0) when relu.
__global__ void add_bias_kernel(float* a, int slots, int width, const int* slot_expert,
                                const float* bias, bool relu) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<size_t>(slots) * width)
    return;
  size_t s = i / width, c = i % width;
  float v = a[i] + bias[static_cast<size_t>(slot_expert[s]) * width + c];
  a[i] = relu ? fmaxf(v, 0.0f) : v;
}

// d[i] = 0 where the ReLU's output was 0.
__global__ void relu_backward_kernel(float* d, const float* out, size_t count) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count && !(out[i] > 0))
    d[i] = 0;
}

// grad[e, c] += Σ over expert e's slots of a[s, c]; grid (columns / threads, experts).
__global__ void column_sums_kernel(const float* a, int width, const int* offsets, float* grad) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, e = blockIdx.y;
  if (c >= width)
    return;
  float sum = 0;
  for (int s = offsets[e]; s < offsets[e + 1]; ++s)
    sum += a[static_cast<size_t>(s) * width + c];
  grad[static_cast<size_t>(e) * width + c] += sum;
}

// One warp per slot: dout[s] = gate[s] · dy[row[s]] and dgate[s] = out[s] · dy[row[s]].
__global__ void combine_backward_kernel(const float* dy, const float* out, int slots, int d,
                                        const int* slot_row, const float* slot_gate, float* dout,
                                        float* dgate) {
  int s = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (s >= slots)
    return;
  const float* dyr = dy + static_cast<size_t>(slot_row[s]) * d;
  const float* o = out + static_cast<size_t>(s) * d;
  float* dor = dout + static_cast<size_t>(s) * d;
  float g = slot_gate[s], dot = 0;
  for (int c = lane; c < d; c += 32) {
    float v = dyr[c];
    dor[c] = g * v;
    dot += o[c] * v;
  }
  for (int offset = 16; offset > 0; offset /= 2)
    dot += __shfl_down_sync(0xffffffffu, dot, offset);
  if (lane == 0)
    dgate[s] = dot;
}

// Through the masked softmax, per row: dl_c = G_c · (dG_c − Σ_j G_j dG_j), where dG is the
// slots' dgate scattered to (row, expert) and 0 elsewhere, plus extra[c] in every row when
// `extra` (one value per expert: the gradient of the losses of G, importance and balance) is
// not null.
__global__ void gate_backward_kernel(const float* gates, const float* dgates, int rows, int n,
                                     const float* extra, float* dlogits) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  size_t at = static_cast<size_t>(r) * n;
  auto dg = [&](int c) { return dgates[at + c] + (extra ? extra[c] : 0.0f); };
  float inner = 0;
  for (int c = 0; c < n; ++c)
    inner += gates[at + c] * dg(c);
  for (int c = 0; c < n; ++c)
    dlogits[at + c] = gates[at + c] * (dg(c) - inner);
}

// Through the row-wise softmax p of the logits, for dL/dp = g[c] in every row (the balance
// loss's gradient): dlogits_c += p_c · (g_c − Σ_j p_j g_j).
__global__ void softmax_backward_add_kernel(const float* probs, const float* g, int rows, int n,
                                            float* dlogits) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  size_t at = static_cast<size_t>(r) * n;
  float inner = 0;
  for (int c = 0; c < n; ++c)
    inner += probs[at + c] * g[c];
  for (int c = 0; c < n; ++c)
    dlogits[at + c] += probs[at + c] * (g[c] - inner);
}

__device__ float softplus(float v) {
  return v > 20.0f ? v : log1pf(expf(v));
}

// Noisy top-k's logits: the noise's scale = softplus(raw), h = logits + ε · scale.
__global__ void noisy_logits_kernel(const float* logits, const float* raw, const float* eps,
                                    size_t count, float* scale, float* h) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  scale[i] = softplus(raw[i]);
  h[i] = logits[i] + eps[i] * scale[i];
}

// out[c] += Σ_r a[r, c] (rows × n); grid (columns / threads, chunks of `chunk` rows).
__global__ void column_totals_kernel(const float* a, int rows, int n, int chunk, float* out) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= n)
    return;
  int first = blockIdx.y * chunk, last = min(rows, first + chunk);
  float sum = 0;
  for (int r = first; r < last; ++r)
    sum += a[static_cast<size_t>(r) * n + c];
  atomicAdd(out + c, sum);
}

// a[i] *= b[i].
__global__ void multiply_kernel(float* a, const float* b, size_t count) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count)
    a[i] *= b[i];
}

// d[i] *= sigmoid(raw[i]): through softplus.
__global__ void softplus_backward_kernel(float* d, const float* raw, size_t count) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count)
    d[i] /= 1.0f + expf(-raw[i]);
}

// The smooth load estimate, one thread per row: P(x, c) = Φ(z) with z = (logits_c − H_j) / σ_c,
// where H_j is the k-th largest of H excluding c (the (k+1)-th when c is in the top k; ties to
// the lower column, as the mask). Keeps z and j for the backward. Precondition: k < n.
__global__ void load_kernel(const float* h, const float* logits, const float* scale, int rows,
                            int n, int k, float* z, int* excluding, float* p) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  size_t at = static_cast<size_t>(r) * n;
  const float* hr = h + at;
  // The columns of rank 0 … k: each the largest of those after the last one in the order
  // (larger value, or equal value and lower column). Without one (NaN), the last one again.
  int order[kernels::max_k + 1];
  for (int t = 0; t <= k; ++t) {
    int best = -1, last = t > 0 ? order[t - 1] : -1;
    for (int c = 0; c < n; ++c) {
      if (last >= 0 && !(hr[c] < hr[last] || (hr[c] == hr[last] && c > last)))
        continue;
      if (best < 0 || hr[c] > hr[best])
        best = c;
    }
    order[t] = best >= 0 ? best : (last >= 0 ? last : 0);
  }
  for (int c = 0; c < n; ++c) {
    bool top = false;
    for (int t = 0; t < k; ++t)
      top |= order[t] == c;
    int j = top ? order[k] : order[k - 1];
    float zc = (logits[at + c] - hr[j]) / scale[at + c];
    z[at + c] = zc;
    excluding[at + c] = j;
    p[at + c] = 0.5f * erfcf(-zc * 0.70710678118654752f);
  }
}

// The load loss's gradient, one thread per row, for dL/dP summed over rows = lg[c]: into the
// logits and the noise scale σ of c and of the column j it was compared with.
__global__ void load_backward_kernel(const float* z, const int* excluding, const float* scale,
                                     const float* eps, const float* lg, int rows, int n,
                                     float* dlogits, float* dstd) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  size_t at = static_cast<size_t>(r) * n;
  for (int c = 0; c < n; ++c) {
    float zc = z[at + c], s = scale[at + c];
    float dz = lg[c] * expf(-zc * zc / 2) * 0.39894228040143268f;
    int j = excluding[at + c];
    dlogits[at + c] += dz / s;
    dstd[at + c] -= dz * zc / s;
    dlogits[at + j] -= dz / s;
    dstd[at + j] -= dz / s * eps[at + j];
  }
}

__global__ void scatter_gates_kernel(const float* dgate, int slots, const int* slot_row,
                                     const int* slot_expert, int n, float* dgates) {
  int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < slots)
    dgates[static_cast<size_t>(slot_row[s]) * n + slot_expert[s]] = dgate[s];
}

/// CV² = variance / mean² of `v` (0 when the mean is 0), with its gradient in `grad`: the
/// same quantity as compute/moe's cv_squared.
inline float cv_squared(const float* v, int n, float* grad) {
  float mean = 0;
  for (int i = 0; i < n; ++i)
    mean += v[i];
  mean /= n;
  std::fill(grad, grad + n, 0.0f);
  if (mean == 0)
    return 0;
  float variance = 0;
  for (int i = 0; i < n; ++i)
    variance += (v[i] - mean) * (v[i] - mean);
  variance /= n;
  for (int i = 0; i < n; ++i)
    grad[i] = (v[i] - mean) * (2 / (n * mean * mean)) - 2 * variance / (n * mean * mean * mean);
  return variance / (mean * mean);
}

} // namespace darcy::gpu::layer_kernels
