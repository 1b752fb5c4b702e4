#include "apps/serving/estimator_model.hpp"

#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/online/sync_message.hpp"
#include "runtime/log.hpp"

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

caf::expected<predict_request> parse_predict(const std::string& body, uint32_t max_deadline_ms) {
  auto envelope = parse_predict_envelope(body, max_deadline_ms);
  if (!envelope)
    return std::move(envelope.error());
  predict_request out;
  out.deadline_ms = envelope->deadline_ms;
  out.allow_partial = envelope->allow_partial;
  auto& instances = envelope->instances;
  auto& b = out.batch;
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
  return out;
}

caf::expected<std::unique_ptr<estimator_model>> estimator_model::load(
  const std::string& dir, access_rules rules, const ops::estimator::embedding_placement& where,
  const std::string& sync_dir, replica_options replicas, std::chrono::milliseconds mend_every) {
  auto model = replicated_model::load(dir, where, replicas);
  if (!model)
    return std::move(model.error());
  std::unique_ptr<estimator_model> m{new estimator_model};
  m->model_ = std::move(*model);
  m->access_ = actors::access_policy{std::move(rules)};
  m->mirror_ = std::make_unique<sync_mirror>(sync_dir);
  if (mend_every.count() > 0)
    m->mender_ = std::thread{[raw = m.get(), mend_every] { raw->mend_loop(mend_every); }};
  return m;
}

estimator_model::~estimator_model() {
  {
    std::lock_guard<std::mutex> guard{stop_mutex_};
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (mender_.joinable())
    mender_.join();
}

void estimator_model::mend_loop(std::chrono::milliseconds every) {
  auto wait = every;
  std::unique_lock<std::mutex> guard{stop_mutex_};
  while (!stop_cv_.wait_for(guard, wait, [this] { return stopping_; })) {
    guard.unlock();
    auto left = mend();
    guard.lock();
    wait = left ? std::min(wait * 2, every * 32) : every;
  }
}

bool estimator_model::mend() {
  std::unique_lock<std::mutex> one_at_a_time{sync_mutex_, std::try_to_lock};
  if (!one_at_a_time.owns_lock())
    return false; // that sync mends what this would
  if (last_dir_.empty() || (!unapplied_ && !model_->out_of_service()))
    return false;
  auto synced = model_->follow(last_dir_);
  if (!synced) {
    if (!unapplied_)
      runtime::log_warn("serving: no copy of export {} follows its syncs: {}", model_->version(),
                        render(synced.error()));
    return true;
  }
  if (unapplied_)
    runtime::log_info("serving: the sync at step {} that failed is applied now",
                      synced->followed.step);
  unapplied_ = false;
  record(synced->followed);
  return model_->out_of_service();
}

void estimator_model::record(const ops::estimator::exported_model::followed& f) {
  std::lock_guard<std::mutex> guard{mutex_};
  synced_ = f;
  synced_at_ = std::chrono::steady_clock::now();
  restores_ += f.restored ? 1 : 0;
}

double estimator_model::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

caf::expected<std::string> estimator_model::predict(const std::string& name,
                                                    const std::string& body,
                                                    const request_context& ctx,
                                                    uint32_t max_deadline_ms) {
  std::optional<ops::estimator::exported_model::followed> synced;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (auto err = access_.admit(ctx, actors::access_action::query, now()))
      return err;
    synced = synced_;
  }
  auto request = parse_predict(body, max_deadline_ms);
  if (!request)
    return std::move(request.error());
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (model_->sharded_embeddings()) {
    auto left_us = request->deadline_ms > 0 ? int64_t{request->deadline_ms} * 1000
                   : ctx.deadline_us > 0    ? ctx.deadline_us - now_us()
                                            : int64_t{max_deadline_ms} * 1000;
    deadline = std::chrono::steady_clock::now() + std::chrono::microseconds{left_us};
  }
  auto answer = model_->predict(request->batch, deadline, request->allow_partial);
  if (!answer)
    return std::move(answer.error());
  auto* spec = &answer->spec;
  nlohmann::json out{{"model", name}, {"version", model_->version()}, {"trace_id", ctx.trace_id}};
  if (deadline)
    out["partial"] = answer->partial;
  if (synced)
    out["sync"] = {{"checkpoint", synced->checkpoint},
                   {"step", synced->step},
                   {"dense_step", synced->dense_step}};
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
  {
    std::lock_guard<std::mutex> guard{mutex_};
    if (auto err = access_.admit(ctx, actors::access_action::manage, now()))
      return err;
  }
  auto parsed = parse_sync_body(body);
  if (!parsed)
    return std::move(parsed.error());
  auto& message = parsed->message;
  auto& dir = parsed->dir;
  // A sync that waited for another would hold an HTTP thread meanwhile: syncs pushed while a
  // slow one is applied could take every thread from the predictions.
  std::unique_lock<std::mutex> one_at_a_time{sync_mutex_, std::try_to_lock};
  if (!one_at_a_time.owns_lock())
    return make_error(errc::unavailable,
                      "a sync of " + name + " is being applied: push this one again after it");
  auto held = [this] {
    std::lock_guard<std::mutex> guard{mutex_};
    return synced_ ? synced_->checkpoint : std::string{};
  }();
  if (message) {
    if (auto err = mirror_->install(*message, held, model_->embedding_tables())) {
      if (is(err, errc::out_of_order))
        runtime::log_info("serving: {} asks for the whole chain: {}", name, render(err));
      return err;
    }
    dir = mirror_->dir();
    if (dir.empty())
      return make_error(errc::out_of_order,
                        "a sync message with no link, to a model that "
                        "holds none: send the whole chain");
  }
  last_dir_ = dir;
  auto synced = model_->follow(dir);
  unapplied_ = !synced;
  if (!synced)
    return std::move(synced.error());
  auto& followed = synced->followed;
  record(followed);
  return nlohmann::json{{"model", name},
                        {"sync",
                         {{"checkpoint", followed.checkpoint},
                          {"step", followed.step},
                          {"dense_step", followed.dense_step},
                          {"applied", followed.applied},
                          {"restored", followed.restored}}},
                        {"reloaded", synced->reloaded > 0},
                        {"replicas_serving", synced->serving}}
    .dump();
}

std::string estimator_model::describe(const std::string& name) const {
  auto sharded = model_->sharded_embeddings();
  nlohmann::json out{{"name", name},
                     {"kind", "estimator"},
                     {"version", model_->version()},
                     {"embeddings", sharded ? "shards" : "in-process"}};
  if (sharded)
    out["replicas"] = model_->describe();
  std::lock_guard<std::mutex> guard{mutex_};
  if (synced_)
    out["sync"] = {
      {"checkpoint", synced_->checkpoint},
      {"step", synced_->step},
      {"dense_step", synced_->dense_step},
      {"restored", synced_->restored},
      {"restores", restores_},
      {"age_s",
       std::chrono::duration<double>(std::chrono::steady_clock::now() - synced_at_).count()}};
  return out.dump();
}

} // namespace darcy::serving
