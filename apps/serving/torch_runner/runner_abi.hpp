// What the LibTorch plugin (libdarcy_torch_runner.so) and the process that loads it share: plain
// C++ types only, so that neither LibTorch's headers nor CAF's cross the boundary. The plugin is
// built with the same compiler and standard library as the binaries that load it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace darcy::serving::torch_runner {

/// One float input of a module: `data` row-major, of `shape`. The caller keeps `data` alive
/// through the forward that reads it.
struct input {
  const float* data = nullptr;
  std::vector<int64_t> shape;
};

/// A TorchScript module loaded by the plugin, in eval mode. forward may be called from several
/// threads at once.
class module {
public:
  virtual ~module() = default;

  /// The module's forward on `inputs`, its answer converted to floats: `values` row-major, of
  /// `shape`. False, with `error` saying why, when the module throws; nothing escapes.
  virtual bool forward(const std::vector<input>& inputs, std::vector<float>& values,
                       std::vector<int64_t>& shape, std::string& error) = 0;
};

/// The plugin's one entry, exported as load_symbol: the module serialized in `bytes` (`size`
/// of them), owned by the caller, or nullptr with `*error` saying why LibTorch refused it.
using load_function = module* (*)(const char* bytes, size_t size, std::string* error);

inline constexpr const char* load_symbol = "darcy_torch_runner_load";

/// The plugin's file name, searched beside the executable and in ../lib/darcy from it.
inline constexpr const char* file_name = "libdarcy_torch_runner.so";

} // namespace darcy::serving::torch_runner
