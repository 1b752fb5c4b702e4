// CUDA build of gpu/moe_layer.hpp. Row-major throughout; cuBLAS (column-major) sees each
// row-major product C = op(A)·op(B) as Cᵀ = op(B)ᵀ·op(A)ᵀ.
#include "gpu/moe_layer.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <utility>

#include "gpu/cublas_library.hpp"
#include "gpu/device.hpp"
#include "gpu/device_array.cuh"
#include "gpu/kernels.cuh"
#include "gpu/moe_layer_kernels.cuh"

namespace darcy::gpu {

namespace {

using kernels::blocks_for;
using namespace layer_kernels;
/// The experts' products go round-robin to this many streams, so that the small products of
/// different experts run at the same time. They are blocking streams: each waits for the work
/// queued before it on the default stream, and the default stream's next work waits for them.
constexpr int expert_streams = 8;

} // namespace

std::string cublas_status() {
  return cublas_library().error;
}

struct moe_layer::impl {
  moe_shape shape;
  int width = 0;                 // w1's columns: hidden, or dim for linear experts
  cublasHandle_t blas = nullptr; // on the default stream
  // One handle per expert stream: a handle's workspace must not be shared across streams.
  std::vector<cudaStream_t> streams;
  std::vector<cublasHandle_t> stream_blas;
  std::string error;

  // Parameters and gradients.
  device_array<float> w_gate, w1, b1, w2, b2, w_noise;
  device_array<float> g_gate, g1, gb1, g2, gb2, g_noise;
  // The last forward and backward.
  int rows = 0, slots = 0;
  std::vector<int> counts, offsets;
  device_array<int> d_counts, d_offsets, slot_row, slot_expert;
  device_array<float> x, dy, logits, probs, mask, gates, slot_gate;
  device_array<float> in, hid, out, y, dout, dgate, dh, din, dx, dgates, dlogits;
  // Noisy gating: x·W_noise, its softplus, the draws ε, H; the load estimate's z, P and the
  // column each was compared with; dL/dstd.
  device_array<float> raw, noise_std, eps, h, load_z, load_p, dstd;
  device_array<int> load_j;
  // The auxiliary losses: column sums of the softmax gates, the gates and P (3 × experts),
  // and their weighted gradients (same layout).
  device_array<float> sums, aux_grads;
  float aux = 0;
  // Calls that may still succeed before every later one fails (fail_after); negative: no limit.
  int calls_left = -1;

  ~impl() {
    if (host_ptrs)
      cudaFreeHost(host_ptrs);
    if (blas)
      cublas_library().destroy(blas);
    for (auto h : stream_blas)
      cublas_library().destroy(h);
    for (auto s : streams)
      cudaStreamDestroy(s);
  }

  bool ok() const { return error.empty(); }

  void cuda(cudaError_t e, const char* what) {
    if (ok() && e != cudaSuccess)
      error = std::string{what} + ": " + cudaGetErrorString(e);
  }

  void cublas(cublasStatus_t e, const char* what) {
    if (ok() && e != CUBLAS_STATUS_SUCCESS)
      error = std::string{what} + ": cuBLAS status " + std::to_string(static_cast<int>(e));
  }

  /// Checks the queued kernels, waiting for the device; returns and clears the error.
  std::string finish(const char* what) {
    cuda(cudaGetLastError(), what);
    cuda(cudaDeviceSynchronize(), what);
    if (calls_left == 0 && ok())
      error = std::string{what} + ": injected device failure (fail_after)";
    else if (calls_left > 0)
      --calls_left;
    std::string e;
    e.swap(error);
    return e;
  }

  size_t experts() const { return static_cast<size_t>(shape.experts); }
  size_t w1_size() const { return experts() * shape.dim * width; }
  size_t b1_size() const { return shape.hidden > 0 ? experts() * shape.hidden : 0; }
  size_t w2_size() const { return shape.hidden > 0 ? experts() * shape.hidden * shape.dim : 0; }
  size_t b2_size() const { return shape.hidden > 0 ? experts() * shape.dim : 0; }
  size_t gate_size() const { return shape.gated ? size_t(shape.dim) * shape.experts : 0; }
  size_t noise_size() const { return shape.noisy ? gate_size() : 0; }
  /// The load loss; with k = experts every expert is in every top k, and it is 0.
  bool load_on() const { return shape.noisy && shape.load_weight > 0 && shape.k < shape.experts; }
  bool aux_on() const {
    return shape.gated && (shape.balance_weight > 0 || shape.importance_weight > 0 || load_on());
  }

  /// Row-major c (m × n) = op(a)·op(b) + beta·c; lda, ldb, ldc are the row-major widths.
  /// Expert products (expert ≥ 0) go to that expert's stream, others to the default stream.
  void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
            float* c, int ldc, float beta, int expert = -1) {
    if (m == 0 || n == 0 || (k == 0 && beta == 1))
      return;
    const float one = 1;
    auto handle = expert < 0 ? blas : stream_blas[expert % stream_blas.size()];
    cublas(
      cublas_library().sgemm(handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                             n, m, k, &one, b, ldb, a, lda, &beta, c, ldc),
      "cublasSgemm");
  }

  /// One product of a phase: row-major c (m × n) = op(a)·op(b) + beta·c.
  struct product {
    int m, n, k;
    const float* a;
    int lda;
    const float* b;
    int ldb;
    float* c;
    int ldc;
  };
  // The products of the phase being queued.
  std::vector<product> phase;
  // The grouped calls' pointer arrays (a, b, c per expert), one region per phase of a step:
  // written in pinned host memory, copied without waiting for the device. A forward starts a
  // step again at region 0, once the device has finished the last one.
  static constexpr int phase_regions = 8;
  const float** host_ptrs = nullptr;
  device_array<const float*> d_ptrs;
  int next_region = 0;

  /// Runs every product of `phase` (cleared after) with op(a), op(b) and beta: one grouped
  /// cuBLAS call on the default stream, or one call per product on the expert streams.
  void run_phase(bool ta, bool tb, float beta) {
    std::vector<product> runnable;
    for (auto& p : phase)
      if (p.m > 0 && p.n > 0 && !(p.k == 0 && beta == 1))
        runnable.push_back(p);
    phase.clear();
    if (runnable.empty() || !ok())
      return;
#if CUBLAS_VERSION >= 120500
    if (shape.grouped) {
      int count = static_cast<int>(runnable.size());
      // cuBLAS sees Cᵀ = op(B)ᵀ·op(A)ᵀ: its A is our b, its B our a, its m our n.
      std::vector<cublasOperation_t> op_a(count, tb ? CUBLAS_OP_T : CUBLAS_OP_N),
        op_b(count, ta ? CUBLAS_OP_T : CUBLAS_OP_N);
      std::vector<int> m(count), n(count), k(count), lda(count), ldb(count), ldc(count),
        sizes(count, 1);
      std::vector<float> alphas(count, 1.0f), betas(count, beta);
      if (next_region == phase_regions) {
        cuda(cudaStreamSynchronize(0), "grouped products");
        next_region = 0;
      }
      size_t region = size_t(next_region++) * 3 * shape.experts;
      auto host = host_ptrs + region;
      auto ptrs = d_ptrs.get() + region;
      for (int i = 0; i < count; ++i) {
        auto& p = runnable[i];
        m[i] = p.n;
        n[i] = p.m;
        k[i] = p.k;
        lda[i] = p.ldb;
        ldb[i] = p.lda;
        ldc[i] = p.ldc;
        host[i] = p.b;
        host[count + i] = p.a;
        host[2 * count + i] = p.c;
      }
      cuda(
        cudaMemcpyAsync(ptrs, host, 3 * size_t(count) * sizeof(float*), cudaMemcpyHostToDevice, 0),
        "grouped products: pointers");
      if (!ok())
        return;
      cublas(cublas_library().sgemm_grouped(
               blas, op_a.data(), op_b.data(), m.data(), n.data(), k.data(), alphas.data(), ptrs,
               lda.data(), ptrs + count, ldb.data(), betas.data(),
               const_cast<float* const*>(ptrs + 2 * count), ldc.data(), count, sizes.data()),
             "cublasSgemmGroupedBatched");
      return;
    }
#endif
    for (size_t i = 0; i < runnable.size(); ++i) {
      auto& p = runnable[i];
      gemm(ta, tb, p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, beta, static_cast<int>(i));
    }
  }

  /// Room for a batch of `count` rows.
  void reserve(int count) {
    size_t r = count, d = shape.dim, n = shape.experts;
    size_t s = shape.gated ? r * std::min(shape.k, shape.experts) : r;
    if (shape.gated && shape.batchwise)
      s = std::max(s, n * std::max<size_t>(1, std::min<size_t>(r, shape.k * r / n)));
    cuda(x.reserve(r * d), "cudaMalloc");
    cuda(dy.reserve(r * d), "cudaMalloc");
    cuda(y.reserve(r * d), "cudaMalloc");
    cuda(dx.reserve(r * d), "cudaMalloc");
    cuda(slot_row.reserve(s), "cudaMalloc");
    cuda(slot_expert.reserve(s), "cudaMalloc");
    cuda(slot_gate.reserve(s), "cudaMalloc");
    cuda(dgate.reserve(s), "cudaMalloc");
    cuda(in.reserve(s * d), "cudaMalloc");
    cuda(out.reserve(s * d), "cudaMalloc");
    cuda(dout.reserve(s * d), "cudaMalloc");
    cuda(din.reserve(s * d), "cudaMalloc");
    if (shape.hidden > 0) {
      cuda(hid.reserve(s * shape.hidden), "cudaMalloc");
      cuda(dh.reserve(s * shape.hidden), "cudaMalloc");
    }
    if (shape.gated)
      for (auto* a : {&logits, &probs, &mask, &gates, &dgates, &dlogits})
        cuda(a->reserve(r * n), "cudaMalloc");
    if (shape.noisy) {
      for (auto* a : {&raw, &noise_std, &eps, &h, &load_z, &load_p, &dstd})
        cuda(a->reserve(r * n), "cudaMalloc");
      cuda(load_j.reserve(r * n), "cudaMalloc");
    }
  }

  /// The auxiliary losses of the last forward's gates: their value into `aux`, their
  /// gradients (per expert, the same for every row) into aux_grads. Waits for the device.
  void auxiliary_losses() {
    int n = shape.experts;
    constexpr int chunk = 64;
    dim3 grid(blocks_for(n), (rows + chunk - 1) / chunk);
    auto totals = [&](const float* a, float* out) {
      column_totals_kernel<<<grid, block_threads>>>(a, rows, n, chunk, out);
    };
    cuda(cudaMemset(sums.get(), 0, 3 * size_t(n) * sizeof(float)), "losses: sums");
    if (!ok())
      return;
    if (shape.balance_weight > 0 && shape.balance_on_softmax) {
      if (!shape.batchwise) // the batchwise mask has computed them
        softmax_rows_kernel<<<blocks_for(rows), block_threads>>>(logits.get(), rows, n,
                                                                 probs.get());
      totals(probs.get(), sums.get());
    } else if (shape.balance_weight > 0) {
      totals(gates.get(), sums.get());
    }
    if (shape.importance_weight > 0)
      totals(gates.get(), sums.get() + n);
    if (load_on()) {
      load_kernel<<<blocks_for(rows), block_threads>>>(h.get(), logits.get(), noise_std.get(), rows,
                                                       n, shape.k, load_z.get(), load_j.get(),
                                                       load_p.get());
      totals(load_p.get(), sums.get() + 2 * n);
    }
    std::vector<float> host(3 * size_t(n)), grads(3 * size_t(n), 0.0f);
    cuda(cudaMemcpy(host.data(), sums.get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost),
         "losses: sums");
    if (!ok())
      return;
    aux = 0;
    if (float w = shape.balance_weight; w > 0)
      for (int i = 0; i < n; ++i) {
        float excess = host[i] / rows - 1.0f / n;
        aux += w * excess * excess / 2;
        grads[i] = w * excess / rows;
      }
    for (int which : {1, 2}) {
      float w = which == 1 ? shape.importance_weight : (load_on() ? shape.load_weight : 0.0f);
      if (w > 0) {
        aux += w * cv_squared(host.data() + which * n, n, grads.data() + which * n);
        for (int i = 0; i < n; ++i)
          grads[which * n + i] *= w;
      }
    }
    // L_balance of the gates G reaches the logits through the masked softmax, as the
    // importance loss does: its gradient joins the importance's.
    if (!shape.balance_on_softmax)
      for (int i = 0; i < n; ++i)
        grads[n + i] += std::exchange(grads[i], 0.0f);
    cuda(cudaMemcpy(aux_grads.get(), grads.data(), grads.size() * sizeof(float),
                    cudaMemcpyHostToDevice),
         "losses: gradients");
  }

  /// The plan of the gate matrix, or of one expert over every row when ungated.
  void plan() {
    auto n = shape.experts;
    counts.assign(n, 0);
    if (shape.gated) {
      count_kernel<<<n, block_threads>>>(gates.get(), rows, n, d_counts.get());
      cuda(cudaMemcpy(counts.data(), d_counts.get(), n * sizeof(int), cudaMemcpyDeviceToHost),
           "plan: counts");
    } else {
      counts[0] = rows;
    }
    offsets.assign(n + 1, 0);
    for (int e = 0; e < n; ++e)
      offsets[e + 1] = offsets[e] + counts[e];
    slots = offsets[n];
    cuda(cudaMemcpy(d_offsets.get(), offsets.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice),
         "plan: offsets");
    if (!ok())
      return;
    if (shape.gated)
      fill_plan_kernel<<<n, block_threads>>>(gates.get(), rows, n, d_offsets.get(), slot_row.get(),
                                             slot_gate.get(), slot_expert.get());
    else
      cuda(cudaMemset(slot_expert.get(), 0, size_t(rows) * sizeof(int)), "plan: experts");
  }

  void experts_forward(const float* from, float* to) {
    int d = shape.dim, h = shape.hidden;
    for (int e = 0; e < shape.experts; ++e) {
      int f = offsets[e], m = counts[e];
      if (h == 0)
        phase.push_back({m, d, d, from + size_t(f) * d, d, w1.get() + size_t(e) * d * d, d,
                         to + size_t(f) * d, d});
      else
        phase.push_back({m, h, d, from + size_t(f) * d, d, w1.get() + size_t(e) * d * h, h,
                         hid.get() + size_t(f) * h, h});
    }
    run_phase(false, false, 0);
    if (h == 0 || slots == 0)
      return;
    add_bias_kernel<<<blocks_for(size_t(slots) * h), block_threads>>>(
      hid.get(), slots, h, slot_expert.get(), b1.get(), true);
    for (int e = 0; e < shape.experts; ++e) {
      int f = offsets[e], m = counts[e];
      phase.push_back({m, d, h, hid.get() + size_t(f) * h, h, w2.get() + size_t(e) * h * d, d,
                       to + size_t(f) * d, d});
    }
    run_phase(false, false, 0);
    add_bias_kernel<<<blocks_for(size_t(slots) * d), block_threads>>>(
      to, slots, d, slot_expert.get(), b2.get(), false);
  }

  void experts_backward(const float* from, const float* d_to, float* d_from) {
    int d = shape.dim, h = shape.hidden;
    if (slots == 0)
      return;
    if (h == 0) {
      for (int e = 0; e < shape.experts; ++e) {
        int f = offsets[e], m = counts[e];
        phase.push_back({d, d, m, from + size_t(f) * d, d, d_to + size_t(f) * d, d,
                         g1.get() + size_t(e) * d * d, d});
      }
      run_phase(true, false, 1);
      for (int e = 0; e < shape.experts; ++e) {
        int f = offsets[e], m = counts[e];
        phase.push_back({m, d, d, d_to + size_t(f) * d, d, w1.get() + size_t(e) * d * d, d,
                         d_from + size_t(f) * d, d});
      }
      run_phase(false, true, 0);
      return;
    }
    dim3 out_grid(blocks_for(d), shape.experts), hid_grid(blocks_for(h), shape.experts);
    column_sums_kernel<<<out_grid, block_threads>>>(d_to, d, d_offsets.get(), gb2.get());
    for (int e = 0; e < shape.experts; ++e) {
      int f = offsets[e], m = counts[e];
      phase.push_back({h, d, m, hid.get() + size_t(f) * h, h, d_to + size_t(f) * d, d,
                       g2.get() + size_t(e) * h * d, d});
    }
    run_phase(true, false, 1);
    for (int e = 0; e < shape.experts; ++e) {
      int f = offsets[e], m = counts[e];
      phase.push_back({m, h, d, d_to + size_t(f) * d, d, w2.get() + size_t(e) * h * d, d,
                       dh.get() + size_t(f) * h, h});
    }
    run_phase(false, true, 0);
    relu_backward_kernel<<<blocks_for(size_t(slots) * h), block_threads>>>(dh.get(), hid.get(),
                                                                           size_t(slots) * h);
    column_sums_kernel<<<hid_grid, block_threads>>>(dh.get(), h, d_offsets.get(), gb1.get());
    for (int e = 0; e < shape.experts; ++e) {
      int f = offsets[e], m = counts[e];
      phase.push_back({d, h, m, from + size_t(f) * d, d, dh.get() + size_t(f) * h, h,
                       g1.get() + size_t(e) * d * h, h});
    }
    run_phase(true, false, 1);
    for (int e = 0; e < shape.experts; ++e) {
      int f = offsets[e], m = counts[e];
      phase.push_back({m, d, h, dh.get() + size_t(f) * h, h, w1.get() + size_t(e) * d * h, h,
                       d_from + size_t(f) * d, d});
    }
    run_phase(false, true, 0);
  }

  /// Forward over the `count` rows in x.
  void forward(int count) {
    rows = count;
    next_region = 0; // every public call ends once the device has finished

    int d = shape.dim, n = shape.experts;
    if (!shape.gated) {
      plan();
      experts_forward(x.get(), y.get());
      return;
    }
    gemm(false, false, rows, n, d, x.get(), d, w_gate.get(), n, logits.get(), n, 0);
    const float* select = logits.get();
    if (shape.noisy) {
      gemm(false, false, rows, n, d, x.get(), d, w_noise.get(), n, raw.get(), n, 0);
      size_t count = size_t(rows) * n;
      noisy_logits_kernel<<<blocks_for(count), block_threads>>>(logits.get(), raw.get(), eps.get(),
                                                                count, noise_std.get(), h.get());
      select = h.get();
    }
    if (shape.batchwise) {
      int m = std::max(1, std::min(rows, static_cast<int>(int64_t{shape.k} * rows / n)));
      softmax_rows_kernel<<<blocks_for(rows), block_threads>>>(logits.get(), rows, n, probs.get());
      batchwise_mask_kernel<<<n, block_threads>>>(probs.get(), rows, n, m, mask.get());
      masked_softmax_kernel<<<blocks_for(rows), block_threads>>>(logits.get(), mask.get(), rows, n,
                                                                 gates.get());
    } else {
      kernels::top_k(select, rows, n, shape.k, nullptr, nullptr, gates.get());
    }
    aux = 0;
    if (aux_on())
      auxiliary_losses();
    plan();
    if (!ok())
      return;
    kernels::gather_rows(x.get(), d, slot_row.get(), slots, in.get());
    experts_forward(in.get(), out.get());
    cuda(cudaMemset(y.get(), 0, size_t(rows) * d * sizeof(float)), "forward: y");
    kernels::scatter_add_rows(out.get(), slots, d, slot_row.get(), slot_gate.get(), y.get());
  }

  /// Backward of the last forward for the rows in dy.
  void backward() {
    int d = shape.dim, n = shape.experts;
    if (!shape.gated) {
      experts_backward(x.get(), dy.get(), dx.get());
      return;
    }
    if (slots > 0)
      combine_backward_kernel<<<blocks_for(size_t(slots) * 32), block_threads>>>(
        dy.get(), out.get(), slots, d, slot_row.get(), slot_gate.get(), dout.get(), dgate.get());
    experts_backward(in.get(), dout.get(), din.get());
    cuda(cudaMemset(dx.get(), 0, size_t(rows) * d * sizeof(float)), "backward: dx");
    kernels::scatter_add_rows(din.get(), slots, d, slot_row.get(), nullptr, dx.get());
    cuda(cudaMemset(dgates.get(), 0, size_t(rows) * n * sizeof(float)), "backward: dgates");
    if (slots > 0)
      scatter_gates_kernel<<<blocks_for(slots), block_threads>>>(
        dgate.get(), slots, slot_row.get(), slot_expert.get(), n, dgates.get());
    // Per expert, what the auxiliary losses of G add to dL/dG in every row.
    bool through_gates =
      shape.importance_weight > 0 || (shape.balance_weight > 0 && !shape.balance_on_softmax);
    const float* importance = through_gates ? aux_grads.get() + n : nullptr;
    gate_backward_kernel<<<blocks_for(rows), block_threads>>>(gates.get(), dgates.get(), rows, n,
                                                              importance, dlogits.get());
    size_t count = size_t(rows) * n;
    if (shape.noisy) { // dL/dstd = dL/dH · ε
      cuda(cudaMemcpyAsync(dstd.get(), dlogits.get(), count * sizeof(float),
                           cudaMemcpyDeviceToDevice, 0),
           "backward: dstd");
      multiply_kernel<<<blocks_for(count), block_threads>>>(dstd.get(), eps.get(), count);
    }
    if (shape.balance_weight > 0 && shape.balance_on_softmax)
      softmax_backward_add_kernel<<<blocks_for(rows), block_threads>>>(probs.get(), aux_grads.get(),
                                                                       rows, n, dlogits.get());
    if (shape.noisy) {
      if (load_on())
        load_backward_kernel<<<blocks_for(rows), block_threads>>>(
          load_z.get(), load_j.get(), noise_std.get(), eps.get(), aux_grads.get() + 2 * n, rows, n,
          dlogits.get(), dstd.get());
      softplus_backward_kernel<<<blocks_for(count), block_threads>>>(dstd.get(), raw.get(), count);
      gemm(true, false, d, n, rows, x.get(), d, dstd.get(), n, g_noise.get(), n, 1);
      gemm(false, true, rows, d, n, dstd.get(), n, w_noise.get(), n, dx.get(), d, 1);
    }
    gemm(true, false, d, n, rows, x.get(), d, dlogits.get(), n, g_gate.get(), n, 1);
    gemm(false, true, rows, d, n, dlogits.get(), n, w_gate.get(), n, dx.get(), d, 1);
  }

  /// Each parameter array with its host vector (of a const or a mutable `p`), for uploads
  /// and downloads.
  template <class Parameters, class F>
  void for_each_parameter(Parameters& p, bool gradients, F&& f) {
    f(p.w_gate, gradients ? g_gate : w_gate, gate_size());
    f(p.w1, gradients ? g1 : w1, w1_size());
    f(p.b1, gradients ? gb1 : b1, b1_size());
    f(p.w2, gradients ? g2 : w2, w2_size());
    f(p.b2, gradients ? gb2 : b2, b2_size());
    f(p.w_noise, gradients ? g_noise : w_noise, noise_size());
  }
};

moe_layer::moe_layer(std::unique_ptr<impl> p) : impl_(std::move(p)) {
}

moe_layer::~moe_layer() = default;

std::unique_ptr<moe_layer> moe_layer::make(const moe_shape& shape, std::string& error) {
  if (shape.dim < 1 || shape.experts < 1 || shape.hidden < 0) {
    error = "gpu moe: dim and experts must be at least 1, hidden at least 0";
    return nullptr;
  }
  if (shape.gated && (shape.k < 1 || shape.k > std::min(shape.experts, kernels::max_k))) {
    error = "gpu moe: k must be in [1, min(experts, 32)], got " + std::to_string(shape.k);
    return nullptr;
  }
  if (!shape.gated && shape.experts != 1) {
    error = "gpu moe: an ungated layer has exactly one expert";
    return nullptr;
  }
  if (shape.noisy && (shape.batchwise || !shape.gated)) {
    error = "gpu moe: noise needs a top-k gate";
    return nullptr;
  }
  for (float w : {shape.balance_weight, shape.importance_weight, shape.load_weight})
    if (!std::isfinite(w) || w < 0) {
      error = "gpu moe: loss weights must be finite and >= 0";
      return nullptr;
    }
  if (shape.load_weight > 0 && !shape.noisy) {
    error = "gpu moe: the load loss needs noisy gating";
    return nullptr;
  }
  if (device_count() == 0) {
    error = "gpu moe: no CUDA device";
    return nullptr;
  }
  if (auto& lib = cublas_library(); !lib.error.empty()) {
    error = lib.error;
    return nullptr;
  }
  auto p = std::make_unique<impl>();
  p->shape = shape;
  p->width = shape.hidden > 0 ? shape.hidden : shape.dim;
  p->cublas(cublas_library().create(&p->blas), "cublasCreate");
  for (int i = 0; i < expert_streams && p->ok(); ++i) {
    cudaStream_t stream = nullptr;
    cublasHandle_t handle = nullptr;
    p->cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
    if (p->ok())
      p->streams.push_back(stream);
    p->cublas(cublas_library().create(&handle), "cublasCreate");
    if (p->ok()) {
      p->stream_blas.push_back(handle);
      p->cublas(cublas_library().set_stream(handle, stream), "cublasSetStream");
    }
  }
  if (shape.tf32) {
    p->cublas(cublas_library().set_math_mode(p->blas, CUBLAS_TF32_TENSOR_OP_MATH),
              "cublasSetMathMode");
    for (auto h : p->stream_blas)
      p->cublas(cublas_library().set_math_mode(h, CUBLAS_TF32_TENSOR_OP_MATH), "cublasSetMathMode");
  }
  moe_parameters sizes;
  p->for_each_parameter(sizes, false,
                        [&](auto&, auto& a, size_t n) { p->cuda(a.reserve(n), "cudaMalloc"); });
  p->for_each_parameter(sizes, true,
                        [&](auto&, auto& a, size_t n) { p->cuda(a.reserve(n), "cudaMalloc"); });
  size_t regions = size_t(impl::phase_regions) * 3 * shape.experts;
  p->cuda(cudaMallocHost(reinterpret_cast<void**>(&p->host_ptrs), regions * sizeof(float*)),
          "cudaMallocHost");
  p->cuda(p->d_ptrs.reserve(regions), "cudaMalloc");
  p->cuda(p->d_counts.reserve(shape.experts), "cudaMalloc");
  p->cuda(p->d_offsets.reserve(shape.experts + 1), "cudaMalloc");
  p->cuda(p->sums.reserve(3 * size_t(shape.experts)), "cudaMalloc");
  p->cuda(p->aux_grads.reserve(3 * size_t(shape.experts)), "cudaMalloc");
  if (auto e = p->finish("gpu moe: setup"); !e.empty()) {
    error = e;
    return nullptr;
  }
  return std::unique_ptr<moe_layer>{new moe_layer{std::move(p)}};
}

std::string moe_layer::set_parameters(const moe_parameters& given) {
  auto& p = *impl_;
  p.for_each_parameter(given, false, [&](const std::vector<float>& host, auto& a, size_t n) {
    if (host.size() != n && p.ok())
      p.error = "gpu moe: a parameter has " + std::to_string(host.size()) + " values, not " +
                std::to_string(n);
    else if (n > 0)
      p.cuda(cudaMemcpy(a.get(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice),
             "gpu moe: upload");
  });
  if (!p.ok())
    return p.finish("gpu moe: set_parameters");
  return zero_grad();
}

std::string moe_layer::gradients(moe_parameters& out) {
  auto& p = *impl_;
  p.for_each_parameter(out, true, [&](std::vector<float>& host, auto& a, size_t n) {
    host.resize(n);
    if (n > 0)
      p.cuda(cudaMemcpy(host.data(), a.get(), n * sizeof(float), cudaMemcpyDeviceToHost),
             "gpu moe: download");
  });
  return p.finish("gpu moe: gradients");
}

std::string moe_layer::zero_grad() {
  auto& p = *impl_;
  moe_parameters none;
  p.for_each_parameter(none, true, [&](auto&, auto& a, size_t n) {
    if (n > 0)
      p.cuda(cudaMemset(a.get(), 0, n * sizeof(float)), "gpu moe: zero_grad");
  });
  return p.finish("gpu moe: zero_grad");
}

std::string moe_layer::forward(const float* x, int rows, float* y, const float* noise) {
  auto& p = *impl_;
  if (rows < 1)
    return "gpu moe: forward needs at least one row";
  if (p.shape.noisy && !noise)
    return "gpu moe: a noisy layer's forward needs its noise";
  size_t values = size_t(rows) * p.shape.dim;
  p.reserve(rows);
  if (p.ok())
    p.cuda(cudaMemcpy(p.x.get(), x, values * sizeof(float), cudaMemcpyHostToDevice),
           "gpu moe: upload x");
  if (p.ok() && p.shape.noisy)
    p.cuda(cudaMemcpy(p.eps.get(), noise, size_t(rows) * p.shape.experts * sizeof(float),
                      cudaMemcpyHostToDevice),
           "gpu moe: upload noise");
  if (p.ok())
    p.forward(rows);
  if (p.ok())
    p.cuda(cudaMemcpy(y, p.y.get(), values * sizeof(float), cudaMemcpyDeviceToHost),
           "gpu moe: download y");
  return p.finish("gpu moe: forward");
}

std::string moe_layer::backward(const float* dy, float* dx) {
  auto& p = *impl_;
  if (p.rows < 1)
    return "gpu moe: backward needs a forward first";
  size_t values = size_t(p.rows) * p.shape.dim;
  p.cuda(cudaMemcpy(p.dy.get(), dy, values * sizeof(float), cudaMemcpyHostToDevice),
         "gpu moe: upload dy");
  if (p.ok())
    p.backward();
  if (p.ok())
    p.cuda(cudaMemcpy(dx, p.dx.get(), values * sizeof(float), cudaMemcpyDeviceToHost),
           "gpu moe: download dx");
  return p.finish("gpu moe: backward");
}

std::string moe_layer::prepare(int rows, uint64_t seed) {
  auto& p = *impl_;
  if (rows < 1)
    return "gpu moe: prepare needs at least one row";
  size_t values = size_t(rows) * p.shape.dim;
  std::mt19937_64 rng{seed};
  std::normal_distribution<float> draw;
  size_t noise = p.shape.noisy ? size_t(rows) * p.shape.experts : 0;
  std::vector<float> host(2 * values + noise);
  for (auto& v : host)
    v = draw(rng);
  p.reserve(rows);
  p.cuda(cudaMemcpy(p.x.get(), host.data(), values * sizeof(float), cudaMemcpyHostToDevice),
         "gpu moe: upload x");
  p.cuda(
    cudaMemcpy(p.dy.get(), host.data() + values, values * sizeof(float), cudaMemcpyHostToDevice),
    "gpu moe: upload dy");
  if (noise > 0)
    p.cuda(cudaMemcpy(p.eps.get(), host.data() + 2 * values, noise * sizeof(float),
                      cudaMemcpyHostToDevice),
           "gpu moe: upload noise");
  p.rows = rows;
  return p.finish("gpu moe: prepare");
}

std::string moe_layer::step() {
  auto& p = *impl_;
  if (p.rows < 1)
    return "gpu moe: step needs prepare first";
  p.forward(p.rows);
  if (p.ok())
    p.backward();
  return p.finish("gpu moe: step");
}

float moe_layer::aux_loss() const {
  return impl_->aux;
}

const std::vector<int>& moe_layer::expert_batches() const {
  return impl_->counts;
}

void moe_layer::fail_after(int calls) {
  impl_->calls_left = calls;
}

} // namespace darcy::gpu
