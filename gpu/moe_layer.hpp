// A whole sparsely-gated MoE layer on the GPU, forward and backward, with its parameters,
// gradients and activations resident on the device: gate logits and the mask (top-k or
// batchwise, noisy top-k), the auxiliary losses, the dispatch plan, the experts as cuBLAS products
// (grouped), the weighted combine. It computes what compute/moe's moe_layer computes in training
// (but the thresholds of a batchwise gate), and, with `gated` off, a dense FFN: one expert over
// every row.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace darcy::gpu {

struct moe_shape {
  int dim = 0;
  int experts = 1;
  /// Experts per row (top-k), or on average (batchwise: k·rows/experts rows per expert).
  int k = 1;
  bool batchwise = false;
  /// 0: linear experts y = x·W (dim × dim); else FFN experts relu(x·W1 + b1)·W2 + b2.
  int hidden = 0;
  /// false: no gate, one expert (experts must be 1) applied to every row with weight 1.
  bool gated = true;
  /// Noisy top-k (not with batchwise): H = x·W_g + ε ⊙ softplus(x·W_noise), where ε are the
  /// caller's standard normal draws, given to each forward.
  bool noisy = false;
  /// Weights of the auxiliary losses, as in gating_config: L_balance of the gates G (of the
  /// softmax gates with balance_on_softmax), CV² of the importance Σ_x G(x), CV² of the smooth
  /// load Σ_x P(x, ·) (noisy only). Each must be finite and ≥ 0.
  float balance_weight = 0;
  bool balance_on_softmax = false;
  float importance_weight = 0;
  float load_weight = 0;
  /// Lets cuBLAS use TF32 tensor cores for the products (about 10 mantissa bits).
  bool tf32 = false;
  /// The experts' products of one phase (say, every expert's forward) as one grouped cuBLAS
  /// call (cublasSgemmGroupedBatched, cuBLAS 12.5 and later); false, or an older cuBLAS: one
  /// call per expert, round-robin over 8 streams.
  bool grouped = true;
};

/// Host copies of the parameters (or their gradients), row-major, stacked expert by expert:
/// w_gate dim × experts; w1 experts × dim × width (width = hidden, or dim for linear
/// experts); FFN experts only: b1 experts × hidden, w2 experts × hidden × dim, b2 experts × dim;
/// noisy layers only: w_noise dim × experts.
struct moe_parameters {
  std::vector<float> w_gate, w1, b1, w2, b2, w_noise;
};

/// Empty when the cuBLAS library the layer calls is loaded with every function it uses (it is
/// opened on the first call, not linked), else why not; "no CUDA" in a build without nvcc.
/// Needs no device.
std::string cublas_status();

/// Every call returns an empty string on success, else what failed; after a failure the
/// layer's results are unspecified until set_parameters succeeds.
class moe_layer {
public:
  /// nullptr and `error` without CUDA, without a device, or for an invalid shape (a width
  /// below 1, k outside [1, min(experts, 32)], an ungated layer of more than one expert, noise
  /// with a batchwise mask or without a gate, a load loss without noise, a negative or
  /// non-finite loss weight).
  static std::unique_ptr<moe_layer> make(const moe_shape& shape, std::string& error);
  ~moe_layer();

  /// Uploads the parameters and zeroes the gradients; every vector must have its size.
  std::string set_parameters(const moe_parameters& p);
  /// The gradients accumulated by backward since the last set_parameters or zero_grad.
  std::string gradients(moe_parameters& out);
  std::string zero_grad();

  /// y (rows × dim, host) for x (rows × dim, host). `noise` (rows × experts, host): the
  /// standard normal draws ε of a noisy layer, required there and ignored elsewhere.
  std::string forward(const float* x, int rows, float* y, const float* noise = nullptr);
  /// dx for dy (both rows × dim, host) of the last forward; adds the parameters' gradients.
  std::string backward(const float* dy, float* dx);

  /// The weighted auxiliary losses of the last forward (0 when every weight is 0); backward
  /// adds their gradients.
  float aux_loss() const;

  /// Seeded normal x and dy (and a noisy layer's ε) of `rows` rows, uploaded once for step().
  std::string prepare(int rows, uint64_t seed);
  /// One forward and backward over the prepared rows, on the device alone; returns once
  /// the device has finished. The step a benchmark times.
  std::string step();

  /// Rows each expert took in the last forward.
  const std::vector<int>& expert_batches() const;

  /// For tests of the callers' fallback: the next `calls` calls that reach the device
  /// (set_parameters, gradients, zero_grad, forward, backward, prepare, step) go as usual, and
  /// every one after them fails, as on a lost device. Negative: no failure.
  void fail_after(int calls);

  struct impl;

private:
  explicit moe_layer(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace darcy::gpu
