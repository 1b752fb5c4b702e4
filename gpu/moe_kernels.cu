// CUDA build of gpu/moe_kernels.hpp.
#include "gpu/moe_kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/kernels.cuh"

namespace darcy::gpu {

namespace {

constexpr int tile = 16;
using kernels::blocks_for;

/// A device buffer freed on scope exit.
template <class T>
class buffer {
public:
  explicit buffer(size_t n) : n_(n) {
    if (n > 0 && cudaMalloc(&p_, n * sizeof(T)) != cudaSuccess)
      p_ = nullptr;
  }
  ~buffer() {
    if (p_)
      cudaFree(p_);
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  bool ok() const { return n_ == 0 || p_ != nullptr; }
  T* get() { return p_; }
  bool upload(const T* host) {
    return n_ == 0 || cudaMemcpy(p_, host, n_ * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess;
  }
  bool download(T* host) {
    return n_ == 0 || cudaMemcpy(host, p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess;
  }

private:
  T* p_ = nullptr;
  size_t n_;
};

std::string last_error(const char* what) {
  auto err = cudaGetLastError();
  if (err == cudaSuccess)
    err = cudaDeviceSynchronize();
  return err == cudaSuccess ? std::string{} : std::string{what} + ": " + cudaGetErrorString(err);
}

std::string no_device() {
  return device_count() == 0 ? "no CUDA device" : "";
}

__global__ void top_k_kernel(const float* logits, int rows, int n, int k, int* indices,
                             float* gates, float* dense) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float best[kernels::max_k];
  int where[kernels::max_k];
  int held = 0;
  const float* row = logits + static_cast<size_t>(r) * n;
  for (int c = 0; c < n; ++c) {
    float v = row[c];
    if (held == k && !(v > best[k - 1]))
      continue;
    int at = held < k ? held++ : k - 1;
    while (at > 0 && v > best[at - 1]) {
      best[at] = best[at - 1];
      where[at] = where[at - 1];
      --at;
    }
    best[at] = v;
    where[at] = c;
  }
  float sum = 0;
  for (int j = 0; j < k; ++j)
    sum += expf(best[j] - best[0]);
  if (dense)
    for (int c = 0; c < n; ++c)
      dense[static_cast<size_t>(r) * n + c] = 0;
  for (int j = 0; j < k; ++j) {
    float g = expf(best[j] - best[0]) / sum;
    if (indices)
      indices[static_cast<size_t>(r) * k + j] = where[j];
    if (gates)
      gates[static_cast<size_t>(r) * k + j] = g;
    if (dense)
      dense[static_cast<size_t>(r) * n + where[j]] = g;
  }
}

__global__ void gather_kernel(const float* x, int d, const int* source, int slots, float* out) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<size_t>(slots) * d)
    return;
  size_t s = i / d, c = i % d;
  out[i] = x[static_cast<size_t>(source[s]) * d + c];
}

// One block computes a tile × tile block of one expert's output rows.
__global__ void grouped_gemm_kernel(const float* in, int d_in, int d_out, const float* weights,
                                    const int* offsets, float* out) {
  int e = blockIdx.z;
  int first = offsets[e], last = offsets[e + 1];
  int row = first + blockIdx.y * tile + threadIdx.y;
  int col = blockIdx.x * tile + threadIdx.x;
  if (first + static_cast<int>(blockIdx.y) * tile >= last)
    return;
  const float* w = weights + static_cast<size_t>(e) * d_in * d_out;
  __shared__ float a[tile][tile];
  __shared__ float b[tile][tile];
  float acc = 0;
  for (int k0 = 0; k0 < d_in; k0 += tile) {
    a[threadIdx.y][threadIdx.x] = row < last && k0 + threadIdx.x < d_in
                                    ? in[static_cast<size_t>(row) * d_in + k0 + threadIdx.x]
                                    : 0.0f;
    b[threadIdx.y][threadIdx.x] = col < d_out && k0 + threadIdx.y < d_in
                                    ? w[static_cast<size_t>(k0 + threadIdx.y) * d_out + col]
                                    : 0.0f;
    __syncthreads();
    for (int j = 0; j < tile; ++j)
      acc += a[threadIdx.y][j] * b[j][threadIdx.x];
    __syncthreads();
  }
  if (row < last && col < d_out)
    out[static_cast<size_t>(row) * d_out + col] = acc;
}

__global__ void scatter_add_kernel(const float* in, int slots, int d, const int* target,
                                   const float* weights, float* y) {
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<size_t>(slots) * d)
    return;
  size_t s = i / d, c = i % d;
  float w = weights ? weights[s] : 1.0f;
  atomicAdd(&y[static_cast<size_t>(target[s]) * d + c], w * in[i]);
}

} // namespace

namespace kernels {

void top_k(const float* logits, int rows, int n, int k, int* indices, float* gates, float* dense) {
  if (rows > 0)
    top_k_kernel<<<blocks_for(rows, 128), 128>>>(logits, rows, n, k, indices, gates, dense);
}

void gather_rows(const float* x, int d, const int* source, int slots, float* out) {
  if (slots > 0 && d > 0)
    gather_kernel<<<blocks_for(size_t(slots) * d, 256), 256>>>(x, d, source, slots, out);
}

void scatter_add_rows(const float* in, int slots, int d, const int* target, const float* weights,
                      float* y) {
  if (slots > 0 && d > 0)
    scatter_add_kernel<<<blocks_for(size_t(slots) * d, 256), 256>>>(in, slots, d, target, weights,
                                                                    y);
}

} // namespace kernels

std::string top_k_gating(const float* logits, int rows, int n, int k, int* indices, float* gates) {
  if (auto err = no_device(); !err.empty())
    return err;
  if (k < 1 || k > n || k > kernels::max_k)
    return "top_k_gating: k must be in [1, min(n, 32)]";
  buffer<float> dl(size_t(rows) * n), dg(size_t(rows) * k);
  buffer<int> di(size_t(rows) * k);
  if (!dl.ok() || !dg.ok() || !di.ok() || !dl.upload(logits))
    return last_error("top_k_gating: device memory");
  kernels::top_k(dl.get(), rows, n, k, di.get(), dg.get(), nullptr);
  if (auto err = last_error("top_k_gating"); !err.empty())
    return err;
  return di.download(indices) && dg.download(gates) ? "" : last_error("top_k_gating: copy");
}

std::string dispatch_rows(const float* x, int rows, int d, const int* source, int slots,
                          float* out) {
  if (auto err = no_device(); !err.empty())
    return err;
  buffer<float> dx(size_t(rows) * d), dout(size_t(slots) * d);
  buffer<int> ds(slots);
  if (!dx.ok() || !dout.ok() || !ds.ok() || !dx.upload(x) || !ds.upload(source))
    return last_error("dispatch_rows: device memory");
  kernels::gather_rows(dx.get(), d, ds.get(), slots, dout.get());
  if (auto err = last_error("dispatch_rows"); !err.empty())
    return err;
  return dout.download(out) ? "" : last_error("dispatch_rows: copy");
}

std::string grouped_gemm(const float* in, int slots, int d_in, int d_out, const float* weights,
                         const int* offsets, int experts, float* out) {
  if (auto err = no_device(); !err.empty())
    return err;
  int largest = 0;
  for (int e = 0; e < experts; ++e)
    largest = std::max(largest, offsets[e + 1] - offsets[e]);
  buffer<float> din(size_t(slots) * d_in), dw(size_t(experts) * d_in * d_out),
    dout(size_t(slots) * d_out);
  buffer<int> doff(experts + 1);
  if (!din.ok() || !dw.ok() || !dout.ok() || !doff.ok() || !din.upload(in) || !dw.upload(weights) ||
      !doff.upload(offsets))
    return last_error("grouped_gemm: device memory");
  if (largest > 0) {
    dim3 grid((d_out + tile - 1) / tile, (largest + tile - 1) / tile, experts);
    grouped_gemm_kernel<<<grid, dim3(tile, tile)>>>(din.get(), d_in, d_out, dw.get(), doff.get(),
                                                    dout.get());
  }
  if (auto err = last_error("grouped_gemm"); !err.empty())
    return err;
  return dout.download(out) ? "" : last_error("grouped_gemm: copy");
}

std::string combine_rows(const float* expert_out, int slots, int d, const int* target,
                         const float* gates, int rows, float* y) {
  if (auto err = no_device(); !err.empty())
    return err;
  buffer<float> dexp(size_t(slots) * d), dg(slots), dy(size_t(rows) * d);
  buffer<int> dt(slots);
  if (!dexp.ok() || !dg.ok() || !dy.ok() || !dt.ok() || !dexp.upload(expert_out) ||
      !dg.upload(gates) || !dt.upload(target))
    return last_error("combine_rows: device memory");
  if (rows > 0)
    cudaMemset(dy.get(), 0, size_t(rows) * d * sizeof(float));
  kernels::scatter_add_rows(dexp.get(), slots, d, dt.get(), dg.get(), dy.get());
  if (auto err = last_error("combine_rows"); !err.empty())
    return err;
  return dy.download(y) ? "" : last_error("combine_rows: copy");
}

} // namespace darcy::gpu
