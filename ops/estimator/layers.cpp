#include "ops/estimator/layers.hpp"

#include <random>

#include "compute/hash.hpp"
#include "compute/nn/init.hpp"
#include "compute/nn/parallel_product.hpp"
#include "messages/error.hpp"

namespace darcy::ops::estimator {

tensor dense(model_context& ctx, tensor x, uint32_t units, const std::string& name) {
  auto in = ctx.value(x).cols();
  auto& kernel = ctx.variables().get(name + "/kernel", [&] {
    std::mt19937_64 rng{compute::mix64(ctx.seed(), compute::hash_key(name))};
    return compute::nn::glorot_uniform<float>(in, units, rng);
  });
  auto& bias = ctx.variables().get(name + "/bias", [&] { return matrix::Zero(1, units); });
  matrix y(ctx.value(x).rows(), units);
  compute::nn::parallel_product<float>(ctx.value(x), false, kernel.value, false, y, false,
                                       ctx.threads());
  y.rowwise() += bias.value.row(0);
  auto result = ctx.record(std::move(y), [x, &kernel, &bias](model_context& c, tensor out) {
    auto& dy = c.grad(out);
    compute::nn::parallel_product<float>(c.value(x), true, dy, false, kernel.grad, true,
                                         c.threads());
    bias.grad += dy.colwise().sum();
    if (c.needs_grad(x))
      compute::nn::parallel_product<float>(dy, false, kernel.value, true, c.grad(x), true,
                                           c.threads());
  });
  ctx.add_op([&] {
    return nlohmann::json{
      {"op", "dense"}, {"in", x.id}, {"out", result.id}, {"units", units}, {"name", name}};
  });
  return result;
}

tensor relu(model_context& ctx, tensor x) {
  matrix y = ctx.value(x).cwiseMax(0.0f);
  auto result = ctx.record(std::move(y), [x](model_context& c, tensor out) {
    if (c.needs_grad(x))
      c.grad(x) += (c.value(out).array() > 0).select(c.grad(out), 0.0f);
  });
  ctx.add_op([&] { return nlohmann::json{{"op", "relu"}, {"in", x.id}, {"out", result.id}}; });
  return result;
}

tensor dropout(model_context& ctx, tensor x, float rate, const std::string& name) {
  if (!ctx.training() || rate <= 0)
    return x;
  std::mt19937_64 rng{
    compute::mix64(compute::mix64(ctx.seed(), ctx.step()), compute::hash_key(name))};
  std::bernoulli_distribution keep{1.0 - rate};
  auto scale = 1.0f / (1.0f - rate);
  auto& v = ctx.value(x);
  matrix mask(v.rows(), v.cols());
  for (Eigen::Index i = 0; i < mask.size(); ++i)
    mask.data()[i] = keep(rng) ? scale : 0.0f;
  matrix y = v.cwiseProduct(mask);
  return ctx.record(std::move(y), [x, mask = std::move(mask)](model_context& c, tensor out) {
    if (c.needs_grad(x))
      c.grad(x) += c.grad(out).cwiseProduct(mask);
  });
}

tensor add(model_context& ctx, tensor a, tensor b) {
  matrix y = ctx.value(a) + ctx.value(b);
  auto result = ctx.record(std::move(y), [a, b](model_context& c, tensor out) {
    for (auto in : {a, b})
      if (c.needs_grad(in))
        c.grad(in) += c.grad(out);
  });
  ctx.add_op([&] {
    return nlohmann::json{{"op", "add"}, {"a", a.id}, {"b", b.id}, {"out", result.id}};
  });
  return result;
}

tensor append_ones(model_context& ctx, tensor x) {
  auto& v = ctx.value(x);
  matrix y(v.rows(), v.cols() + 1);
  y << v, matrix::Ones(v.rows(), 1);
  auto result = ctx.record(std::move(y), [x](model_context& c, tensor out) {
    if (c.needs_grad(x))
      c.grad(x) += c.grad(out).leftCols(c.grad(out).cols() - 1);
  });
  ctx.add_op([&] {
    return nlohmann::json{{"op", "append_ones"}, {"x", x.id}, {"out", result.id}};
  });
  return result;
}

caf::expected<tensor> input_layer(model_context& ctx,
                                  const compute::estimator::feature_map& features,
                                  compute::estimator::input_layer<float>& layer) {
  for (auto* p : layer.parameters())
    ctx.variables().add(p);
  layer.set_training(ctx.training());
  auto x = layer.forward(features);
  if (!x)
    return make_error(x.error());
  auto result = !ctx.training() || !layer.trainable()
                  ? ctx.constant(std::move(*x))
                  : ctx.record(std::move(*x), [&layer](model_context& c, tensor out) {
                      if (auto err = layer.backward(c.grad(out)))
                        c.fail(make_error(err));
                    });
  ctx.add_op([&] {
    return nlohmann::json{{"op", "input"}, {"out", result.id}, {"columns", layer.spec()}};
  });
  return result;
}

} // namespace darcy::ops::estimator
