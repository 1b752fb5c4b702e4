// cuBLAS opened on first use instead of linked: loading libcublasLt runs its initializers in
// every process at start (0.6 s of CPU for `darcy --help`), GPU or not. The calls the MoE
// layer makes are bound once, on the first layer a process prepares. Internal to gpu/; compiled
// by nvcc only.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace darcy::gpu {

/// The cuBLAS calls the layer makes.
struct cublas_api {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
#if CUBLAS_VERSION >= 120500
  decltype(&cublasSgemmGroupedBatched) sgemm_grouped = nullptr;
#endif
  /// Empty once every call is bound.
  std::string error;
};

/// The library of the cuBLAS major version the layer was compiled against, opened once.
const cublas_api& cublas_library();

} // namespace darcy::gpu
