// What a model function works in: the mode of the call, the model's named variables (which
// live across calls and in checkpoints), and a tape of the call's operations that the train op
// runs backwards. Layers (ops/estimator/layers.hpp) are free functions over a model_context.
//
//   tensor model(model_context& ctx, const batch& b) {
//     auto x = ctx.constant(features_matrix);
//     return dense(ctx, relu(ctx, dense(ctx, x, 64, "hidden")), 10, "logits");
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <nlohmann/json.hpp>

#include "compute/nn/tensor.hpp"

namespace darcy::ops::estimator {

using matrix = compute::nn::matrix;
using parameter = compute::nn::parameter<float>;

enum class mode : uint8_t { train, eval, predict };

std::string to_string(mode m);

/// The model's variables by name, in creation order. A variable is created once, by the first
/// call that asks for it; later calls get the same one. Parameters owned elsewhere (embedding
/// tables of feature columns) are registered by pointer and must outlive the store.
class variable_store {
public:
  /// The variable `name`, made by `init` when it does not exist yet. Precondition: an existing
  /// variable of that name has the shape `init` would give.
  parameter& get(const std::string& name, const std::function<matrix()>& init);
  /// Adds `p` under p->name unless that name is taken by `p` already.
  void add(parameter* p);
  /// Every variable, in creation order.
  const compute::nn::parameter_list<float>& all() const { return all_; }
  parameter* find(const std::string& name) const;

private:
  std::map<std::string, std::unique_ptr<parameter>> owned_;
  std::map<std::string, parameter*> by_name_;
  compute::nn::parameter_list<float> all_;
};

/// A value on the tape.
struct tensor {
  size_t id = 0;
};

class model_context {
public:
  model_context(variable_store& vars, mode m, uint64_t seed, size_t threads)
    : vars_(vars), mode_(m), seed_(seed), threads_(threads) {}

  mode current_mode() const { return mode_; }
  bool training() const { return mode_ == mode::train; }
  variable_store& variables() { return vars_; }
  uint64_t seed() const { return seed_; }
  size_t threads() const { return threads_; }
  /// The global step this call computes (training); layers that draw (dropout) draw anew
  /// each step from (seed, step).
  uint64_t step() const { return step_; }
  void set_step(uint64_t step) { step_ = step; }

  /// A value without a gradient path (inputs).
  tensor constant(matrix value);
  /// A value computed from others; `backward` reads grad(result) and adds to the inputs'
  /// grads and the variables' grads. It runs only when the result has a gradient.
  tensor record(matrix value, std::function<void(model_context&, tensor result)> backward);

  const matrix& value(tensor t) const { return nodes_[t.id].value; }
  /// False for constants: nothing upstream of them needs a gradient.
  bool needs_grad(tensor t) const { return static_cast<bool>(nodes_[t.id].backward); }
  /// The gradient of t, zero-sized until something adds to it.
  matrix& grad(tensor t);

  /// Sets dL/d(t) and runs every recorded backward step in reverse order.
  void backpropagate(tensor t, matrix dvalue);

  /// A backward step that could not finish (a service did not take its gradients) records
  /// its error here; the Estimator fails the step with the first one.
  void fail(caf::error err) {
    if (!failure_)
      failure_ = std::move(err);
  }
  const caf::error& failure() const { return failure_; }

  /// While an export traces the model, each layer appends what it did, by tensor id; the
  /// export saves the list as the model's graph. `build` returns the op's JSON and is called
  /// only while tracing, so that a training step builds no JSON.
  void trace(bool on) { tracing_ = on; }
  template <class Build>
  void add_op(Build&& build) {
    if (tracing_)
      graph_.push_back(std::forward<Build>(build)());
  }
  const nlohmann::json& graph() const { return graph_; }

private:
  struct node {
    matrix value;
    matrix grad;
    std::function<void(model_context&, tensor)> backward;
  };
  variable_store& vars_;
  mode mode_;
  uint64_t seed_;
  size_t threads_;
  uint64_t step_ = 0;
  std::vector<node> nodes_;
  bool tracing_ = false;
  caf::error failure_;
  nlohmann::json graph_ = nlohmann::json::array();
};

} // namespace darcy::ops::estimator
