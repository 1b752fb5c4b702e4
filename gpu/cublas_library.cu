#include "gpu/cublas_library.hpp"

#include <dlfcn.h>

#include <type_traits>

namespace darcy::gpu {

const cublas_api& cublas_library() {
  static const cublas_api api = [] {
    cublas_api a;
    auto name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef DARCY_CUBLAS_DIR
    if (!lib) // the toolkit this was built with, when the loader's path does not have it
      lib = dlopen((std::string{DARCY_CUBLAS_DIR} + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!lib) {
      const char* why = dlerror();
      a.error = "gpu moe: cannot load cuBLAS (" + name + "): " + (why ? why : "not found");
      return a;
    }
    auto bind = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (!fn && a.error.empty())
        a.error = "gpu moe: " + name + " lacks " + symbol;
    };
    bind(a.create, "cublasCreate_v2");
    bind(a.destroy, "cublasDestroy_v2");
    bind(a.set_stream, "cublasSetStream_v2");
    bind(a.set_math_mode, "cublasSetMathMode");
    bind(a.sgemm, "cublasSgemm_v2");
#if CUBLAS_VERSION >= 120500
    bind(a.sgemm_grouped, "cublasSgemmGroupedBatched");
#endif
    return a;
  }();
  return api;
}

} // namespace darcy::gpu
