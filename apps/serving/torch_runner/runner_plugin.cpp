// The LibTorch plugin: the only file of Darcy that includes LibTorch's headers. Built as a module
// library that processes load when they first run a PyTorch export (torch_script.hpp).
#include <exception>
#include <sstream>

#include <torch/script.h>

#include "apps/serving/torch_runner/runner_abi.hpp"

namespace darcy::serving::torch_runner {

class script_module : public module {
public:
  explicit script_module(torch::jit::script::Module m) : module_(std::move(m)) { module_.eval(); }

  bool forward(const std::vector<input>& inputs, std::vector<float>& values,
               std::vector<int64_t>& shape, std::string& error) override {
    try {
      std::vector<torch::jit::IValue> args;
      args.reserve(inputs.size());
      for (auto& in : inputs)
        args.emplace_back(torch::from_blob(const_cast<float*>(in.data), in.shape));
      c10::InferenceMode guard;
      auto out = module_.forward(args).toTensor().to(torch::kFloat).contiguous();
      shape.assign(out.sizes().begin(), out.sizes().end());
      auto* data = out.data_ptr<float>();
      values.assign(data, data + out.numel());
      return true;
    } catch (const std::exception& e) {
      error = e.what();
      return false;
    }
  }

private:
  torch::jit::script::Module module_;
};

} // namespace darcy::serving::torch_runner

extern "C" __attribute__((visibility("default"))) darcy::serving::torch_runner::module*
darcy_torch_runner_load(const char* bytes, size_t size, std::string* error) {
  try {
    std::istringstream in{std::string{bytes, size}};
    return new darcy::serving::torch_runner::script_module{torch::jit::load(in)};
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}
