#include "ops/estimator/layers.hpp"

#include <random>

#include "compute/hash.hpp"
#include "compute/nn/batch_norm.hpp"
#include "compute/nn/dot_interaction.hpp"
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

tensor batch_norm(model_context& ctx, tensor x, const std::string& name, float momentum,
                  float eps) {
  auto width = ctx.value(x).cols();
  auto& vars = ctx.variables();
  auto& gamma = vars.get(name + "/gamma", [&] { return matrix::Ones(1, width); });
  auto& beta = vars.get(name + "/beta", [&] { return matrix::Zero(1, width); });
  auto& moving_mean = vars.get(name + "/moving_mean", [&] { return matrix::Zero(1, width); });
  auto& moving_var = vars.get(name + "/moving_variance", [&] { return matrix::Ones(1, width); });
  tensor result;
  if (!ctx.training() || ctx.value(x).rows() == 0) {
    result =
      ctx.record(compute::nn::batch_norm_infer<float>(ctx.value(x), gamma.value, beta.value,
                                                      moving_mean.value, moving_var.value, eps),
                 [x, &gamma, &moving_var, eps](model_context& c, tensor out) {
                   if (!c.needs_grad(x))
                     return;
                   matrix scale = gamma.value.array() * (moving_var.value.array() + eps).rsqrt();
                   c.grad(x) += (c.grad(out).array().rowwise() * scale.row(0).array()).matrix();
                 });
  } else {
    auto cache = std::make_shared<compute::nn::batch_norm_cache<float>>();
    matrix mean, var;
    auto y = compute::nn::batch_norm_train<float>(ctx.value(x), gamma.value, beta.value, eps,
                                                  *cache, mean, var);
    result = ctx.record(
      std::move(y), [=, &gamma, &beta, &moving_mean, &moving_var](model_context& c, tensor out) {
        auto dx = compute::nn::batch_norm_backward<float>(c.grad(out), gamma.value, *cache,
                                                          gamma.grad, beta.grad);
        if (c.needs_grad(x))
          c.grad(x) += dx;
        moving_mean.grad += (1 - momentum) * (moving_mean.value - mean);
        moving_var.grad += (1 - momentum) * (moving_var.value - var);
      });
  }
  ctx.add_op([&] {
    return nlohmann::json{
      {"op", "batch_norm"}, {"in", x.id}, {"out", result.id}, {"name", name}, {"eps", eps}};
  });
  return result;
}

caf::expected<tensor> dot_interaction(model_context& ctx, tensor dense, tensor sparse) {
  auto d = ctx.value(dense).cols();
  auto s = ctx.value(sparse).cols();
  if (d == 0 || s % d != 0 || ctx.value(dense).rows() != ctx.value(sparse).rows())
    return make_error(errc::dimension_mismatch, "dot_interaction: the embeddings are " +
                                                  std::to_string(s) +
                                                  " wide, not a multiple of the dense part's " +
                                                  std::to_string(d) + ", or the row counts differ");
  auto y = compute::nn::dot_interaction<float>(ctx.value(dense), ctx.value(sparse));
  auto result = ctx.record(std::move(y), [dense, sparse](model_context& c, tensor out) {
    matrix ddense, dsparse;
    compute::nn::dot_interaction_backward<float>(c.grad(out), c.value(dense), c.value(sparse),
                                                 ddense, dsparse);
    if (c.needs_grad(dense))
      c.grad(dense) += ddense;
    if (c.needs_grad(sparse))
      c.grad(sparse) += dsparse;
  });
  ctx.add_op([&] {
    return nlohmann::json{
      {"op", "dot_interaction"}, {"dense", dense.id}, {"sparse", sparse.id}, {"out", result.id}};
  });
  return result;
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
