// The build without CUDA: no GPU MoE layer can be made.
#include "gpu/moe_layer.hpp"

namespace darcy::gpu {

struct moe_layer::impl {
  std::vector<int> none;
};

std::string cublas_status() {
  return "no CUDA";
}

moe_layer::moe_layer(std::unique_ptr<impl> p) : impl_(std::move(p)) {
}

moe_layer::~moe_layer() = default;

std::unique_ptr<moe_layer> moe_layer::make(const moe_shape&, std::string& error) {
  error = "gpu moe: this build has no CUDA kernels";
  return nullptr;
}

// A layer never exists without CUDA; these only satisfy the linker.
std::string moe_layer::set_parameters(const moe_parameters&) {
  return "no CUDA";
}
std::string moe_layer::gradients(moe_parameters&) {
  return "no CUDA";
}
std::string moe_layer::zero_grad() {
  return "no CUDA";
}
std::string moe_layer::forward(const float*, int, float*, const float*) {
  return "no CUDA";
}
std::string moe_layer::backward(const float*, float*) {
  return "no CUDA";
}
std::string moe_layer::prepare(int, uint64_t) {
  return "no CUDA";
}
std::string moe_layer::step() {
  return "no CUDA";
}
float moe_layer::aux_loss() const {
  return 0;
}
const std::vector<int>& moe_layer::expert_batches() const {
  return impl_->none;
}
void moe_layer::fail_after(int) {
}

} // namespace darcy::gpu
