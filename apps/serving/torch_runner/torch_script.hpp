// TorchScript modules run by LibTorch, which lives in a plugin (runner_plugin.cpp) loaded the
// first time a module is: a process that serves no PyTorch export never maps LibTorch and the
// few hundred libraries it needs, so it starts in a fraction of the time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "apps/serving/torch_runner/runner_abi.hpp"

namespace darcy::serving {

class torch_script {
public:
  /// The module serialized in `bytes` (torch.jit.save), in eval mode. errc::unsupported when
  /// the plugin cannot be found or loaded (a build without LibTorch has none), naming where it
  /// was looked for; errc::corrupt_file with LibTorch's reason for bytes it cannot load.
  static caf::expected<std::shared_ptr<torch_script>> load(const std::string& bytes);

  /// The module's forward on `inputs`, which must answer `rows` × `per_row` numbers with
  /// `rows` as its first dimension. errc::invalid_argument for a module that throws;
  /// errc::dimension_mismatch for an answer of another size.
  caf::expected<std::vector<float>> forward(const std::vector<torch_runner::input>& inputs,
                                            size_t rows, size_t per_row);

  /// Where the plugin is looked for: the file $DARCY_TORCH_RUNNER names when it is set, and
  /// nowhere else; otherwise beside the executable, in ../lib/darcy from it, then where this
  /// build wrote it, in this order.
  static std::vector<std::string> plugin_paths();

private:
  explicit torch_script(std::unique_ptr<torch_runner::module> m);
  std::unique_ptr<torch_runner::module> module_;
};

} // namespace darcy::serving
