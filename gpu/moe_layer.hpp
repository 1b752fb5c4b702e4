// A whole sparsely-gated MoE layer on the GPU, forward and backward, with its parameters,
// gradients and activations resident on the device: gate logits and the mask (top-k or
// batchwise), the dispatch plan, the experts as cuBLAS products (grouped), the weighted combine. It
// computes what compute/moe's moe_layer computes (no noise, no auxiliary losses, no threshold
// training), and, with `gated` off, a dense FFN: one expert over every row.
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
  /// Lets cuBLAS use TF32 tensor cores for the products (about 10 mantissa bits).
  bool tf32 = false;
  /// The experts' products of one phase (say, every expert's forward) as one grouped cuBLAS
  /// call (cublasSgemmGroupedBatched, cuBLAS 12.5 and later); false, or an older cuBLAS: one
  /// call per expert, round-robin over 8 streams.
  bool grouped = true;
};

/// Host copies of the parameters (or their gradients), row-major, stacked expert by expert:
/// w_gate dim × experts; w1 experts × dim × width (width = hidden, or dim for linear
/// experts); FFN experts only: b1 experts × hidden, w2 experts × hidden × dim, b2 experts × dim.
struct moe_parameters {
  std::vector<float> w_gate, w1, b1, w2, b2;
};

/// Every call returns an empty string on success, else what failed; after a failure the
/// layer's results are unspecified until set_parameters succeeds.
class moe_layer {
public:
  /// nullptr and `error` without CUDA, without a device, or for an invalid shape (a width
  /// below 1, k outside [1, min(experts, 32)], an ungated layer of more than one expert).
  static std::unique_ptr<moe_layer> make(const moe_shape& shape, std::string& error);
  ~moe_layer();

  /// Uploads the parameters and zeroes the gradients; every vector must have its size.
  std::string set_parameters(const moe_parameters& p);
  /// The gradients accumulated by backward since the last set_parameters or zero_grad.
  std::string gradients(moe_parameters& out);
  std::string zero_grad();

  /// y (rows × dim, host) for x (rows × dim, host).
  std::string forward(const float* x, int rows, float* y);
  /// dx for dy (both rows × dim, host) of the last forward; adds the parameters' gradients.
  std::string backward(const float* dy, float* dx);

  /// Seeded normal x and dy of `rows` rows, uploaded once for step().
  std::string prepare(int rows, uint64_t seed);
  /// One forward and backward over the prepared rows, on the device alone; returns once
  /// the device has finished. The step a benchmark times.
  std::string step();

  /// Rows each expert took in the last forward.
  const std::vector<int>& expert_batches() const;

  struct impl;

private:
  explicit moe_layer(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace darcy::gpu
