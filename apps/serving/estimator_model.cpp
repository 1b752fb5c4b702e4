#include "apps/serving/estimator_model.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"

namespace darcy::serving {

namespace ce = compute::estimator;

namespace {

caf::error bad_instance(size_t i, const std::string& feature, const std::string& what) {
  return make_error(errc::invalid_argument,
                    "instance " + std::to_string(i) + ", feature '" + feature + "': " + what);
}

/// Appends instance i's value of `key` to `out`, which instance 0 shaped.
caf::error append_value(size_t i, const std::string& key, const nlohmann::json& v,
                        ce::feature_value& out) {
  auto strings = v.is_string() || (v.is_array() && !v.empty() && v.front().is_string());
  auto numbers = v.is_number() || (v.is_array() && !v.empty() && v.front().is_number());
  if (v.is_array() && v.empty())
    strings = true; // an example without strings (a bag of no words)
  if (!strings && !numbers)
    return bad_instance(i, key, "not a number, a string or a non-empty list of either");
  if (i == 0)
    out.width = numbers ? static_cast<uint32_t>(v.is_array() ? v.size() : 1) : 0;
  if (numbers != (out.width > 0))
    return bad_instance(i, key, "numbers and strings mixed across instances");
  if (strings) {
    std::vector<std::string> row;
    for (auto& s : v.is_array() ? v : nlohmann::json::array({v})) {
      if (!s.is_string())
        return bad_instance(i, key, "a list mixing strings with other values");
      row.push_back(s.get<std::string>());
    }
    out.strings.push_back(std::move(row));
    return {};
  }
  auto width = v.is_array() ? v.size() : 1;
  if (width != out.width)
    return bad_instance(
      i, key, std::to_string(width) + " numbers, instance 0 has " + std::to_string(out.width));
  for (auto& x : v.is_array() ? v : nlohmann::json::array({v})) {
    if (!x.is_number() || !std::isfinite(x.get<double>()))
      return bad_instance(i, key, "a list mixing numbers with other values, or not finite");
    out.numbers.push_back(x.get<double>());
  }
  return {};
}

} // namespace

caf::expected<ops::estimator::batch> parse_instances(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("instances") || !j["instances"].is_array())
    return make_error(errc::invalid_argument, "a predict body is {\"instances\": [{...}, ...]}");
  if (j.size() != 1)
    return make_error(errc::invalid_argument, "a predict body has only \"instances\"");
  auto& instances = j["instances"];
  if (instances.empty())
    return make_error(errc::empty_batch, "a predict request needs at least one instance");
  if (instances.size() > max_predict_instances)
    return make_error(errc::batch_too_large, std::to_string(instances.size()) +
                                               " instances, at most " +
                                               std::to_string(max_predict_instances));
  ops::estimator::batch b;
  for (size_t i = 0; i < instances.size(); ++i) {
    auto& instance = instances[i];
    if (!instance.is_object())
      return make_error(errc::invalid_argument,
                        "instance " + std::to_string(i) + " is not an object");
    if (i > 0 && instance.size() != b.features.size())
      return make_error(errc::invalid_argument,
                        "instance " + std::to_string(i) + " has other features than instance 0");
    for (auto& [key, value] : instance.items()) {
      if (i > 0 && !b.features.count(key))
        return bad_instance(i, key, "not a feature of instance 0");
      if (auto err = append_value(i, key, value, b.features[key]))
        return err;
    }
  }
  return b;
}

caf::expected<std::unique_ptr<estimator_model>> estimator_model::load(
  const std::string& dir, access_rules rules, const ops::estimator::embedding_placement& where) {
  auto model = ops::estimator::exported_model::load(dir, "", where);
  if (!model)
    return std::move(model.error());
  std::unique_ptr<estimator_model> m{new estimator_model};
  m->model_ = std::move(*model);
  m->access_ = actors::access_policy{std::move(rules)};
  return m;
}

caf::expected<std::string> estimator_model::predict(const std::string& name,
                                                    const std::string& body,
                                                    const request_context& ctx) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (auto err = access_.admit(ctx, actors::access_action::query, now))
    return err;
  auto b = parse_instances(body);
  if (!b)
    return std::move(b.error());
  auto spec = model_->predict_spec(*b);
  if (!spec)
    return std::move(spec.error());
  nlohmann::json out{{"model", name}, {"version", model_->version()}, {"trace_id", ctx.trace_id}};
  auto& rows = out["predictions"] = nlohmann::json::array();
  auto& values = spec->predictions;
  for (Eigen::Index r = 0; r < values.rows(); ++r) {
    auto& row = rows.emplace_back(nlohmann::json::array());
    for (Eigen::Index c = 0; c < values.cols(); ++c)
      row.push_back(values(r, c));
  }
  if (!spec->predicted_labels.empty())
    out["labels"] = spec->predicted_labels;
  return out.dump();
}

caf::expected<std::string> estimator_model::sync(const std::string& name, const std::string& body,
                                                 const request_context& ctx) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (auto err = access_.admit(ctx, actors::access_action::manage, now))
    return err;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("dir") || !j["dir"].is_string())
    return make_error(errc::invalid_argument, "a sync body is {\"dir\": \"SYNC_DIR\"}");
  auto followed = model_->follow(j["dir"].get<std::string>());
  if (!followed)
    return std::move(followed.error());
  synced_ = *followed;
  synced_at_ = std::chrono::steady_clock::now();
  return nlohmann::json{{"model", name},
                        {"sync",
                         {{"checkpoint", followed->checkpoint},
                          {"step", followed->step},
                          {"applied", followed->applied},
                          {"restored", followed->restored}}}}
    .dump();
}

std::string estimator_model::describe(const std::string& name) const {
  std::lock_guard<std::mutex> guard{mutex_};
  nlohmann::json out{{"name", name},
                     {"kind", "estimator"},
                     {"version", model_->version()},
                     {"embeddings", model_->sharded_embeddings() ? "shards" : "in-process"}};
  if (synced_)
    out["sync"] = {
      {"checkpoint", synced_->checkpoint},
      {"step", synced_->step},
      {"age_s",
       std::chrono::duration<double>(std::chrono::steady_clock::now() - synced_at_).count()}};
  return out.dump();
}

} // namespace darcy::serving
