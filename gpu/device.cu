// CUDA build of gpu/device.hpp. Errors from the runtime (no driver, no device) mean "no GPU".
#include "gpu/device.hpp"

#include <cuda_runtime.h>

namespace darcy::gpu {

bool built_with_cuda() {
  return true;
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string device_name(int index) {
  if (index < 0 || index >= device_count())
    return {};
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess)
    return {};
  return std::string{prop.name} + " (" + std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
}

} // namespace darcy::gpu
