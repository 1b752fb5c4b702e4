// Layers applied in order, and the residual connection y = x + f(x) around any layer: the
// building blocks of deeper stacks (an expert's feed-forward network, residual LSTM layers).
//
//   nn::sequential<float> ffn;
//   ffn.add(std::make_unique<nn::dense<float>>(512, 1024, rng));
//   ffn.add(std::make_unique<nn::relu<float>>());
//   ffn.add(std::make_unique<nn::dense<float>>(1024, 512, rng));
#pragma once

#include <memory>
#include <vector>

#include "compute/nn/layer.hpp"

namespace darcy::compute::nn {

template <class T>
class sequential final : public layer<T> {
public:
  using matrix = matrix_t<T>;

  void add(std::unique_ptr<layer<T>> next) { layers_.push_back(std::move(next)); }

  matrix forward(const matrix& x) override;
  matrix backward(const matrix& dy) override;
  parameter_list<T> parameters() override;
  void set_training(bool training) override;
  void set_threads(size_t threads) override;

  size_t size() const { return layers_.size(); }

private:
  std::vector<std::unique_ptr<layer<T>>> layers_;
};

/// y = x + inner(x). Precondition: inner keeps the width of its input.
template <class T>
class residual final : public layer<T> {
public:
  using matrix = matrix_t<T>;

  explicit residual(std::unique_ptr<layer<T>> inner) : inner_(std::move(inner)) {}

  matrix forward(const matrix& x) override { return x + inner_->forward(x); }
  matrix backward(const matrix& dy) override { return dy + inner_->backward(dy); }
  parameter_list<T> parameters() override { return inner_->parameters(); }
  void set_training(bool training) override { inner_->set_training(training); }
  void set_threads(size_t threads) override { inner_->set_threads(threads); }

private:
  std::unique_ptr<layer<T>> inner_;
};

} // namespace darcy::compute::nn
