#include "apps/serving/torch_runner/torch_script.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "messages/error.hpp"

namespace darcy::serving {

namespace {

/// The plugin's entry, found once per process; the reason it was not, else.
struct plugin {
  torch_runner::load_function load = nullptr;
  std::string failure;
};

const plugin& the_plugin() {
  static const plugin found = [] {
    plugin p;
    std::string tried;
    for (auto& path : torch_script::plugin_paths()) {
      if (!std::filesystem::exists(path)) {
        tried += (tried.empty() ? "" : ", ") + path;
        continue;
      }
      // The handle stays open for the process's life: modules and their code live in it.
      auto* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        p.failure = path + " cannot be loaded: " + dlerror();
        return p;
      }
      p.load =
        reinterpret_cast<torch_runner::load_function>(dlsym(handle, torch_runner::load_symbol));
      if (p.load == nullptr)
        p.failure = path + " has no " + torch_runner::load_symbol;
      return p;
    }
#if DARCY_HAS_LIBTORCH
    p.failure = std::string{"LibTorch's runner "} + torch_runner::file_name +
                " is not where it was looked for (" + tried + ")";
#else
    p.failure = "this build has no LibTorch (install libtorch-dev, build again)";
#endif
    return p;
  }();
  return found;
}

} // namespace

std::vector<std::string> torch_script::plugin_paths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("DARCY_TORCH_RUNNER"); env != nullptr && *env != '\0')
    return {env};
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    paths.push_back((exe.parent_path() / torch_runner::file_name).string());
    paths.push_back((exe.parent_path().parent_path() / "lib/darcy" / torch_runner::file_name)
                      .lexically_normal()
                      .string());
  }
#ifdef DARCY_TORCH_RUNNER_BUILT
  paths.emplace_back(DARCY_TORCH_RUNNER_BUILT);
#endif
  return paths;
}

torch_script::torch_script(std::unique_ptr<torch_runner::module> m) : module_(std::move(m)) {
}

caf::expected<std::shared_ptr<torch_script>> torch_script::load(const std::string& bytes) {
  auto& p = the_plugin();
  if (p.load == nullptr)
    return make_error(errc::unsupported, p.failure);
  std::string error;
  std::unique_ptr<torch_runner::module> m{p.load(bytes.data(), bytes.size(), &error)};
  if (!m)
    return make_error(errc::corrupt_file,
                      "LibTorch cannot load its module: " + error.substr(0, error.find('\n')));
  return std::shared_ptr<torch_script>{new torch_script{std::move(m)}};
}

caf::expected<std::vector<float>> torch_script::forward(
  const std::vector<torch_runner::input>& inputs, size_t rows, size_t per_row) {
  std::vector<float> values;
  std::vector<int64_t> shape;
  std::string error;
  if (!module_->forward(inputs, values, shape, error))
    return make_error(errc::invalid_argument, "the module: " + error);
  if (shape.empty() || shape[0] != static_cast<int64_t>(rows) || values.size() != rows * per_row)
    return make_error(errc::dimension_mismatch,
                      "the module answered " + std::to_string(values.size()) + " numbers for " +
                        std::to_string(rows) + " instances of " + std::to_string(per_row));
  return values;
}

} // namespace darcy::serving
