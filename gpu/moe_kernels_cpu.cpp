// The build without CUDA: every MoE kernel reports that there is no GPU.
#include "gpu/moe_kernels.hpp"

namespace darcy::gpu {

namespace {

std::string no_cuda() {
  return "this build has no CUDA kernels";
}

} // namespace

std::string top_k_gating(const float*, int, int, int, int*, float*) {
  return no_cuda();
}

std::string dispatch_rows(const float*, int, int, const int*, int, float*) {
  return no_cuda();
}

std::string grouped_gemm(const float*, int, int, int, const float*, const int*, int, float*) {
  return no_cuda();
}

std::string combine_rows(const float*, int, int, const int*, const float*, int, float*) {
  return no_cuda();
}

} // namespace darcy::gpu
