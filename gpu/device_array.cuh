// A device array that grows on demand, as the GPU layers keep their scratch buffers. Internal to
// gpu/; compiled by nvcc only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace darcy::gpu {

/// A device array that grows on demand; growing drops the contents.
template <class T>
class device_array {
public:
  device_array() = default;
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  ~device_array() {
    if (p_)
      cudaFree(p_);
  }
  cudaError_t reserve(size_t n) {
    if (n <= n_)
      return cudaSuccess;
    if (p_)
      cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
    auto err = cudaMalloc(&p_, n * sizeof(T));
    if (err == cudaSuccess)
      n_ = n;
    return err;
  }
  T* get() const { return p_; }

private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

} // namespace darcy::gpu
