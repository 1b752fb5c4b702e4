#include "ops/estimator/estimator.hpp"

#include <chrono>
#include <cmath>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"
#include "runtime/metrics.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/checkpoint_transaction.hpp"
#include "stores/checkpoint/parameter_part.hpp"

namespace darcy::ops::estimator {

namespace {

constexpr const char* service_name = "estimator";
constexpr const char* variables_part = "variables.params";

/// Where a training step's time goes, one histogram per phase in the process's /metrics:
/// input (the next batch), pull (the servers' values), forward (the model function, with its
/// embedding lookups), backward (the train op, with its embedding updates), update (the push
/// to the servers, or the local optimizer step) and hooks (checkpoints included).
class step_phases {
public:
  /// In step_phase_names order.
  enum phase { input, pull, forward, backward, update, hooks, count };
  static_assert(count == step_phase_names.size());

  step_phases() {
    for (size_t i = 0; i < count; ++i)
      histograms_[i] = runtime::process_metrics().histogram(
        "darcy_estimator_step_seconds", "Time of each phase of an estimator's training steps",
        {{"phase", step_phase_names[i]}});
  }

  /// Records the time since the previous call (or construction) as phase `p`.
  void lap(phase p) {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - last_).count();
    histograms_[p]->observe(seconds);
    totals_[p] += seconds;
    last_ = now;
  }

  /// Starts the next phase now, leaving the time since the last lap out.
  void skip() { last_ = std::chrono::steady_clock::now(); }

  /// Seconds recorded by this object, by phase name.
  std::map<std::string, double> totals() const {
    std::map<std::string, double> result;
    for (size_t i = 0; i < count; ++i)
      result[step_phase_names[i]] = totals_[i];
    return result;
  }

private:
  std::shared_ptr<runtime::metric_histogram> histograms_[count];
  double totals_[count] = {};
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

caf::error no_model_dir() {
  return make_error(errc::invalid_config, "estimator: run_config.model_dir is empty");
}

/// The string field `key` of a manifest's extra, or empty when it is missing or not a string.
std::string text_field(const nlohmann::json& extra, const char* key) {
  auto it = extra.find(key);
  return it != extra.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

} // namespace

estimator::estimator(model_fn fn, run_config cfg, params p)
  : fn_(std::move(fn)), cfg_(std::move(cfg)), params_(std::move(p)), optimizer_(cfg_.optimizer) {
  if (cfg_.servers)
    cfg_.servers->set_placement(cfg_.placement);
}

caf::expected<std::string> estimator::checkpoint_position() {
  if (cfg_.model_dir.empty())
    return std::string{};
  stores::checkpoint_dir root{cfg_.model_dir};
  auto manifest = root.read_manifest();
  if (!manifest)
    return is(manifest.error(), errc::not_found) ? caf::expected<std::string>{std::string{}}
                                                 : caf::expected<std::string>{manifest.error()};
  auto extra = nlohmann::json::parse(manifest->extra, nullptr, false);
  if (!extra.is_object() || !extra.contains("input_position"))
    return make_error(errc::corrupt_file,
                      "estimator: the checkpoint's manifest has no input position");
  return text_field(extra, "input_position");
}

caf::error estimator::restore_variables() {
  if (cfg_.model_dir.empty())
    return {};
  auto dir = cfg_.model_dir;
  stores::checkpoint_dir own{dir};
  auto manifest = own.read_manifest();
  bool warm = false;
  if (!manifest && is(manifest.error(), errc::not_found) && !cfg_.warm_start_from.empty()) {
    dir = cfg_.warm_start_from;
    manifest = stores::checkpoint_dir{dir}.read_manifest();
    warm = true;
    if (!manifest && is(manifest.error(), errc::not_found))
      return make_error(errc::not_found, "estimator: no checkpoint to warm-start from in " + dir);
  }
  if (!manifest)
    return is(manifest.error(), errc::not_found) ? caf::error{} : manifest.error();
  if (manifest->service != service_name || manifest->parts.size() != 1)
    return make_error(
      errc::invalid_config,
      "estimator: " + dir + " holds a checkpoint of service '" + manifest->service + "'");
  auto extra = nlohmann::json::parse(manifest->extra, nullptr, false);
  if (!extra.is_object())
    return make_error(errc::corrupt_file, "estimator: the checkpoint's manifest is damaged");
  auto embeddings = text_field(extra, "embeddings");
  if (!embeddings.empty() && !cfg_.embeddings)
    return make_error(errc::invalid_config,
                      "estimator: the checkpoint holds dynamic embeddings; "
                      "run_config.embeddings must name their session");
  stores::checkpoint_dir root{dir};
  if (auto err =
        stores::read_parameter_part(root, manifest->parts.front(), vars_.all(), optimizer_))
    return err;
  if (!embeddings.empty()) {
    auto restored = ops::restore(*cfg_.embeddings, dir + "/" + embeddings);
    if (!restored)
      return std::move(restored.error());
    restored_rows_ = 0;
    for (auto& c : restored->embeddings) {
      auto s = ops::stats(*cfg_.embeddings, c.name);
      if (!s)
        return std::move(s.error());
      restored_rows_ += s->rows;
    }
  }
  global_step_ = static_cast<uint64_t>(manifest->step);
  saved_step_ = global_step_;
  input_position_ = warm ? std::string{} : text_field(extra, "input_position");
  seek_pending_ = !input_position_.empty();
  return {};
}

caf::error estimator::join_servers() {
  auto* servers = cfg_.servers;
  if (!servers)
    return {};
  if (cfg_.chief)
    return servers->initialize(vars_.all(), optimizer_, global_step_);
  // A worker started before the chief loaded the servers waits for it.
  auto step = servers->pull_when_ready(vars_.all(), std::chrono::minutes(1));
  if (!step)
    return std::move(step.error());
  global_step_ = *step;
  return {};
}

caf::error estimator::build(const input_fn& input) {
  if (built_)
    return {};
  auto first = first_batch(input, "estimator");
  if (!first)
    return std::move(first.error());
  auto r = call(mode::train, *first);
  return r ? caf::error{} : std::move(r.error());
}

caf::error estimator::reload() {
  if (!built_)
    return make_error(errc::invalid_argument, "estimator: reload before the variables exist");
  if (cfg_.model_dir.empty())
    return no_model_dir();
  if (!stores::checkpoint_dir{cfg_.model_dir}.read_manifest())
    return make_error(errc::not_found, "estimator: no checkpoint in " + cfg_.model_dir);
  return restore_variables();
}

caf::expected<nlohmann::json> estimator::trace(const batch& b) {
  auto r = call(mode::predict, b, true);
  if (!r)
    return std::move(r.error());
  return r->ctx->graph();
}

caf::expected<estimator::run> estimator::call(mode m, const batch& b, bool trace) {
  auto once = [&]() -> caf::expected<run> {
    run r{std::make_unique<model_context>(vars_, m, cfg_.seed, cfg_.threads), {}};
    r.ctx->set_step(global_step_);
    r.ctx->trace(trace);
    auto spec = fn_(*r.ctx, b, params_);
    if (!spec)
      return std::move(spec.error());
    r.spec = std::move(*spec);
    return r;
  };
  if (built_)
    return once();
  auto first = once();
  if (!first)
    return first;
  built_ = true;
  auto err = restore_variables();
  if (!err && cfg_.after_restore) {
    if (auto step = cfg_.after_restore(*this, global_step_); !step) {
      err = std::move(step.error());
    } else if (*step != global_step_) {
      global_step_ = saved_step_ = *step;
      input_position_.clear();
      seek_pending_ = false;
    }
  }
  if (!err)
    err = join_servers();
  if (err) {
    built_ = false;
    return err;
  }
  return once();
}

caf::expected<uint64_t> estimator::fetch_server_state() {
  if (cfg_.servers) {
    auto step = cfg_.servers->fetch_state(vars_.all(), optimizer_);
    if (!step)
      return std::move(step.error());
    global_step_ = *step;
  }
  return global_step_;
}

caf::error estimator::save_checkpoint() {
  if (cfg_.model_dir.empty())
    return no_model_dir();
  if (auto step = fetch_server_state(); !step)
    return std::move(step.error());
  auto t =
    stores::checkpoint_transaction::begin(cfg_.model_dir, "step-" + std::to_string(global_step_));
  if (!t)
    return std::move(t.error());
  auto part = stores::write_parameter_part(t->root(), t->id() + "/" + variables_part, vars_.all(),
                                           optimizer_);
  if (!part)
    return std::move(part.error());
  nlohmann::json extra{{"input_position", input_position_}};
  if (cfg_.embeddings) {
    // The service's own consistent checkpoint inside this checkpoint's directory, complete
    // before the manifest names it; retention removes it with its checkpoint.
    auto name = t->id() + "/embeddings";
    if (auto err = ops::save(*cfg_.embeddings, cfg_.model_dir + "/" + name,
                             {static_cast<int64_t>(global_step_), input_position_, {}}))
      return err;
    extra["embeddings"] = name;
  }
  checkpoint_manifest manifest;
  manifest.service = service_name;
  manifest.step = static_cast<int64_t>(global_step_);
  manifest.parts = {*part};
  manifest.extra = extra.dump();
  if (auto err = t->commit(std::move(manifest), std::max<size_t>(cfg_.keep_checkpoint_max, 1)))
    return err;
  saved_step_ = global_step_;
  return {};
}

caf::expected<train_result> estimator::train(const input_fn& input, uint64_t max_steps,
                                             std::vector<hook_ptr> hooks) {
  if (auto err = compute::validate(cfg_.optimizer))
    return make_error(err);
  if (auto err = compute::validate(cfg_.schedule))
    return make_error(err);
  auto pipeline = input();
  if (!pipeline)
    return std::move(pipeline.error());
  auto& in = **pipeline;
  // A resumed run continues the input where the checkpoint left it.
  // (Built by build() instead, it continues from the position restored then.)
  std::string position = seek_pending_ ? input_position_ : std::string{};
  if (!built_) {
    auto newest = checkpoint_position();
    if (!newest)
      return std::move(newest.error());
    position = std::move(*newest);
  }
  if (!position.empty())
    if (auto err = in.seek(position))
      return err;
  train_result result;
  bool started = false;
  auto start = std::chrono::steady_clock::now();
  bool stop = false;
  step_phases phases;
  auto tables_before = embedding_seconds_of_this_thread();
  while (!stop && (max_steps == 0 || global_step_ < max_steps)) {
    auto next = in.next();
    if (!next)
      return std::move(next.error());
    if (!*next)
      break;
    phases.lap(step_phases::input);
    if (cfg_.servers && built_) {
      auto step = cfg_.servers->pull(vars_.all());
      if (!step)
        return std::move(step.error());
      global_step_ = *step;
      if (max_steps > 0 && global_step_ >= max_steps)
        break;
      phases.lap(step_phases::pull);
    }
    auto r = call(mode::train, **next);
    if (!r)
      return std::move(r.error());
    phases.lap(step_phases::forward);
    if (!started) {
      started = true;
      seek_pending_ = false;
      result.resumed_from = global_step_;
      if (max_steps > 0 && global_step_ >= max_steps)
        break;
      for (auto& h : hooks)
        if (auto err = h->begin(*this, global_step_))
          return err;
      phases.skip();
    }
    for (auto& h : hooks)
      if (auto err = h->before_step(*this, global_step_))
        return err;
    for (auto* p : vars_.all())
      p->zero_grad();
    if (!r->spec.train_op)
      return make_error(errc::invalid_config, "estimator: the model function gave no train op");
    r->spec.train_op();
    if (auto& err = r->ctx->failure())
      return err;
    phases.lap(step_phases::backward);
    if (cfg_.servers) {
      auto step = cfg_.servers->push(vars_.all(), r->spec.loss);
      if (!step)
        return std::move(step.error());
      global_step_ = *step;
    } else {
      optimizer_.set_learning_rate(
        compute::scheduled_rate(cfg_.optimizer.learning_rate, cfg_.schedule, global_step_));
      optimizer_.step(vars_.all());
      ++global_step_;
    }
    phases.lap(step_phases::update);
    ++result.steps;
    result.examples += (*next)->rows();
    result.last_loss = r->spec.loss;
    input_position_ = in.position();
    runtime::process_metrics().record_curve(
      "estimator loss, " + (cfg_.model_dir.empty() ? std::string{"no model_dir"} : cfg_.model_dir),
      static_cast<double>(global_step_), r->spec.loss);
    step_result s{global_step_, r->spec.loss, (*next)->rows(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
    for (auto& h : hooks) {
      auto action = h->after_step(*this, s);
      if (!action)
        return std::move(action.error());
      stop = stop || *action == hook_action::stop;
    }
    // A checkpoint at each multiple of save_checkpoints_steps that the global step passed
    // (with servers it moves by the steps of every worker).
    auto every = cfg_.save_checkpoints_steps;
    if (every > 0 && global_step_ / every > saved_step_ / every && !cfg_.model_dir.empty())
      if (auto err = save_checkpoint())
        return err;
    phases.lap(step_phases::hooks);
  }
  if (started)
    for (auto& h : hooks)
      if (auto err = h->end(*this, global_step_))
        return err;
  if (!cfg_.model_dir.empty() && result.steps > 0)
    if (auto err = save_checkpoint())
      return err;
  // A backward sent straight to the shards is answered later; one that failed is reported by
  // this call, not by the next (a worker saves no checkpoint, whose save would report it).
  if (cfg_.embeddings)
    if (auto err = ops::flush(*cfg_.embeddings))
      return err;
  result.global_step = global_step_;
  result.phase_seconds = phases.totals();
  // The tables' share of forward and backward (dynamic embedding columns on this thread).
  auto tables = embedding_seconds_of_this_thread();
  result.phase_seconds["forward.embedding_lookup"] = tables.lookup - tables_before.lookup;
  result.phase_seconds["backward.embedding_update"] = tables.backward - tables_before.backward;
  return result;
}

caf::error estimator::for_each_batch(const input_fn& input, mode m, uint64_t limit,
                                     const std::function<caf::error(const batch&, run&)>& f) {
  auto pipeline = input();
  if (!pipeline)
    return std::move(pipeline.error());
  for (uint64_t step = 0; limit == 0 || step < limit; ++step) {
    auto next = (*pipeline)->next();
    if (!next)
      return std::move(next.error());
    if (!*next)
      break;
    auto r = call(m, **next);
    if (!r)
      return std::move(r.error());
    if (auto err = f(**next, *r))
      return err;
  }
  return {};
}

caf::expected<std::map<std::string, double>> estimator::evaluate(const input_fn& input,
                                                                 uint64_t steps) {
  std::vector<compute::estimator::named_metric> metrics;
  double loss_sum = 0, examples = 0;
  auto err = for_each_batch(input, mode::eval, steps, [&](const batch& b, run& r) -> caf::error {
    auto& spec = r.spec;
    if (metrics.empty() && spec.make_metrics)
      metrics = spec.make_metrics();
    if (spec.update_metrics)
      if (auto err = spec.update_metrics(metrics))
        return err;
    auto rows = static_cast<double>(b.rows());
    loss_sum += spec.loss * rows;
    examples += rows;
    return {};
  });
  if (err)
    return err;
  if (examples == 0)
    return make_error(errc::invalid_argument, "estimator: evaluate got no examples");
  std::map<std::string, double> out;
  for (auto& m : metrics)
    out[m.name] = m.metric.value();
  out["loss"] = loss_sum / examples;
  out["global_step"] = static_cast<double>(global_step_);
  return out;
}

caf::expected<matrix> estimator::predict(const input_fn& input) {
  std::vector<matrix> parts;
  Eigen::Index rows = 0;
  auto err = for_each_batch(input, mode::predict, 0, [&](const batch&, run& r) -> caf::error {
    rows += r.spec.predictions.rows();
    parts.push_back(std::move(r.spec.predictions));
    return {};
  });
  if (err)
    return err;
  matrix out(rows, parts.empty() ? 0 : parts.front().cols());
  Eigen::Index at = 0;
  for (auto& p : parts) {
    out.middleRows(at, p.rows()) = p;
    at += p.rows();
  }
  return out;
}

} // namespace darcy::ops::estimator
