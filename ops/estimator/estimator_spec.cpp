#include "ops/estimator/estimator_spec.hpp"

#include "messages/error.hpp"

namespace darcy::ops::estimator {

caf::expected<estimator_spec> head_spec(model_context& ctx, compute::estimator::head<float>& h,
                                        tensor logits, const batch& b) {
  estimator_spec spec;
  auto& z = ctx.value(logits);
  if (z.cols() != h.logits_dimension())
    return make_error(errc::dimension_mismatch, "head: the model gives " +
                                                  std::to_string(z.cols()) +
                                                  " logits per example, the head needs " +
                                                  std::to_string(h.logits_dimension()));
  ctx.add_op([&] {
    auto heads = nlohmann::json::array();
    for (auto& part : h.parts())
      heads.push_back({{"kind", static_cast<int>(part.kind)},
                       {"name", part.name},
                       {"classes", part.classes},
                       {"label_dimension", part.label_dimension},
                       {"weight", part.weight}});
    return nlohmann::json{{"op", "head"}, {"logits", logits.id}, {"heads", heads}};
  });
  spec.predictions = h.predictions(z);
  spec.export_outputs["predictions"] = spec.predictions;
  if (h.parts().size() == 1 &&
      h.parts().front().kind != compute::estimator::head_kind::regression) {
    auto classes = h.predicted_classes(z, 0);
    spec.export_outputs["classes"] =
      Eigen::Map<const Eigen::VectorXd>(classes.data(), static_cast<Eigen::Index>(classes.size()))
        .cast<float>();
  }
  if (ctx.current_mode() == mode::predict)
    return spec;
  if (b.labels.rows() == 0)
    return make_error(errc::invalid_argument,
                      "head: " + to_string(ctx.current_mode()) + " needs labels");
  auto loss = h.loss(z, b.labels);
  if (!loss)
    return make_error(loss.error());
  spec.loss = *loss;
  if (ctx.training()) {
    spec.train_op = [&ctx, &h, logits] { ctx.backpropagate(logits, h.gradient()); };
  } else {
    spec.make_metrics = [&h] { return h.make_metrics(); };
    spec.update_metrics = [&h, z = matrix{z}, labels = b.labels](
                            std::vector<compute::estimator::named_metric>& m) -> caf::error {
      if (auto err = h.update_metrics(m, z, labels))
        return make_error(err);
      return {};
    };
  }
  return spec;
}

} // namespace darcy::ops::estimator
