#include "apps/serving/torch_model.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/serving/predict_envelope.hpp"
#include "apps/serving/sync_mirror.hpp"
#include "apps/serving/torch_runner/torch_script.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/follow_chain.hpp"
#include "ops/online/sync_message.hpp"
#include "ops/torch/torch_export.hpp"
#include "ops/torch/torch_inputs.hpp"

namespace darcy::serving {

using clock_type = std::chrono::steady_clock;

namespace {

/// A request waiting for its batch: its instances, its deadline, and its outputs once `done`
/// (under the queue's mutex).
struct pending_request {
  ops::torch_batch batch;
  clock_type::time_point deadline;
  bool allow_partial = false;
  bool done = false;
  caf::expected<std::vector<float>> outputs{caf::error{}};
};

} // namespace

struct torch_model::impl {
  ops::torch_export exported;
  std::unique_ptr<ops::session> session;
  std::vector<de_config> configs;
  bool sharded = false;
  /// Numbers an instance's output has.
  size_t output_size = 1;
  /// Replaced whole by a dense sync; a batch holds the one it started with.
  std::shared_ptr<torch_script> module;
  std::mutex module_mutex;

  /// Held by a sync throughout: one at a time, the others refused.
  std::mutex sync_mutex;
  /// The sync chain's checkpoint the tables hold; the dense sync the module is (its folder).
  std::string held;
  std::string dense_version;
  std::string dense_checkpoint;
  int64_t dense_step = -1;
  /// Where sync messages are installed; used under sync_mutex.
  std::unique_ptr<sync_mirror> mirror;
  /// The last sync applied, and its dense step: under access_mutex.
  std::optional<ops::followed_chain> synced;
  int64_t synced_dense_step = -1;
  std::string synced_dense_checkpoint;
  std::chrono::milliseconds restore_timeout{std::chrono::minutes{10}};

  std::mutex access_mutex;
  actors::access_policy access;
  clock_type::time_point start = clock_type::now();

  /// Requests not taken by a batch yet; `running` while a thread runs one. Each request's
  /// thread waits until its request is done, running the next batch itself whenever none
  /// runs: requests that come while a batch runs go together in the next one.
  std::mutex queue_mutex;
  std::condition_variable batch_done;
  std::deque<std::shared_ptr<pending_request>> queue;
  bool running = false;

  /// The outputs of batch `b`, instances × output_size.
  caf::expected<std::vector<float>> run(const ops::torch_batch& b, clock_type::time_point deadline,
                                        bool allow_partial);
  /// Runs the queue's first requests, at most max_predict_instances instances (at least one
  /// request), as one batch; `lock` holds queue_mutex, released while the batch runs.
  void run_next(std::unique_lock<std::mutex>& lock);
};

caf::expected<std::vector<float>> torch_model::impl::run(const ops::torch_batch& b,
                                                         clock_type::time_point deadline,
                                                         bool allow_partial) {
  std::optional<ops::lookup_deadline_scope> limit;
  if (sharded)
    limit.emplace(deadline, allow_partial);
  auto slots = ops::pool_slots(*session, exported.spec, configs, b);
  if (!slots)
    return std::move(slots.error());
  auto n = static_cast<int64_t>(b.instances);
  std::vector<torch_runner::input> inputs;
  for (size_t d = 0; d < b.dense.size(); ++d) {
    std::vector<int64_t> shape{n};
    auto& more = exported.spec.dense[d].shape;
    shape.insert(shape.end(), more.begin(), more.end());
    inputs.push_back({b.dense[d].data(), std::move(shape)});
  }
  for (size_t s = 0; s < slots->size(); ++s)
    inputs.push_back(
      {(*slots)[s].data(), {n, static_cast<int64_t>(exported.spec.slots[s].width())}});
  std::shared_ptr<torch_script> current;
  {
    std::lock_guard<std::mutex> guard{module_mutex};
    current = module;
  }
  return current->forward(inputs, b.instances, output_size);
}

void torch_model::impl::run_next(std::unique_lock<std::mutex>& lock) {
  std::vector<std::shared_ptr<pending_request>> taken;
  ops::torch_batch batch;
  auto deadline = clock_type::time_point::max();
  bool allow_partial = true;
  while (!queue.empty() && (taken.empty() || batch.instances + queue.front()->batch.instances <=
                                               max_predict_instances)) {
    auto p = std::move(queue.front());
    queue.pop_front();
    deadline = std::min(deadline, p->deadline);
    allow_partial = allow_partial && p->allow_partial;
    ops::append_instances(batch, ops::torch_batch{p->batch});
    taken.push_back(std::move(p));
  }
  lock.unlock();
  auto out = run(batch, deadline, allow_partial);
  lock.lock();
  size_t at = 0;
  for (auto& p : taken) {
    auto count = p->batch.instances * output_size;
    if (out)
      p->outputs = std::vector<float>(out->begin() + static_cast<ptrdiff_t>(at),
                                      out->begin() + static_cast<ptrdiff_t>(at + count));
    else
      p->outputs = out.error();
    p->done = true;
    at += count;
  }
}

torch_model::torch_model(std::unique_ptr<impl> i) : impl_(std::move(i)) {
}

torch_model::~torch_model() = default;

caf::expected<std::unique_ptr<torch_model>> torch_model::load(
  const std::string& dir, access_rules rules, const ops::estimator::embedding_placement& where,
  const std::string& sync_dir) {
  auto exported = ops::read_torch_export(dir);
  if (!exported)
    return std::move(exported.error());
  auto m = std::make_unique<impl>();
  auto module = torch_script::load(exported->module);
  if (!module)
    return is(module.error(), errc::unsupported)
             ? make_error(errc::unsupported,
                          dir + " is a PyTorch export, and " + context_of(module.error()))
             : make_error(errc::corrupt_file, dir + ": " + context_of(module.error()));
  m->module = std::move(*module);
  exported->module.clear();
  m->exported = std::move(*exported);
  for (auto d : m->exported.spec.output)
    m->output_size *= static_cast<size_t>(d);
  auto opened = ops::estimator::open_serving_tables(m->exported.embeddings, where, m->configs);
  if (!opened)
    return std::move(opened.error());
  m->session = std::move(*opened);
  m->sharded = where.cluster.has_value();
  m->restore_timeout = where.restore_timeout;
  m->mirror = std::make_unique<sync_mirror>(sync_dir, ops::torch_dense_sync_service);
  m->access = actors::access_policy{std::move(rules)};
  return std::unique_ptr<torch_model>{new torch_model{std::move(m)}};
}

caf::expected<std::string> torch_model::predict(const std::string& name, const std::string& body,
                                                const request_context& ctx,
                                                uint32_t max_deadline_ms) {
  nlohmann::json synced;
  {
    std::lock_guard<std::mutex> guard{impl_->access_mutex};
    auto now = std::chrono::duration<double>(clock_type::now() - impl_->start).count();
    if (auto err = impl_->access.admit(ctx, actors::access_action::query, now))
      return err;
    if (impl_->synced)
      synced = {{"checkpoint", impl_->synced->checkpoint},
                {"step", impl_->synced->step},
                {"dense_step", impl_->synced_dense_step}};
  }
  auto envelope = parse_predict_envelope(body, max_deadline_ms);
  if (!envelope)
    return std::move(envelope.error());
  auto batch = ops::read_torch_instances(impl_->exported.spec, envelope->instances);
  if (!batch)
    return std::move(batch.error());
  auto p = std::make_shared<pending_request>();
  p->batch = std::move(*batch);
  auto left_ms =
    envelope->deadline_ms > 0 ? int64_t{envelope->deadline_ms} : int64_t{max_deadline_ms};
  p->deadline = clock_type::now() + std::chrono::milliseconds{left_ms};
  p->allow_partial = envelope->allow_partial;
  {
    std::unique_lock<std::mutex> lock{impl_->queue_mutex};
    impl_->queue.push_back(p);
    while (!p->done) {
      if (impl_->running) {
        impl_->batch_done.wait(lock, [&] { return p->done || !impl_->running; });
        continue;
      }
      impl_->running = true;
      impl_->run_next(lock);
      impl_->running = false;
      impl_->batch_done.notify_all();
    }
  }
  auto& outputs = p->outputs;
  if (!outputs)
    return std::move(outputs.error());
  nlohmann::json out{{"model", name}, {"version", impl_->exported.version}};
  if (!synced.is_null())
    out["sync"] = std::move(synced);
  auto& rows = out["predictions"] = nlohmann::json::array();
  auto per = impl_->output_size;
  for (size_t i = 0; i < p->batch.instances; ++i) {
    if (impl_->exported.spec.output.empty()) {
      rows.push_back((*outputs)[i]);
      continue;
    }
    auto& row = rows.emplace_back(nlohmann::json::array());
    for (size_t c = 0; c < per; ++c)
      row.push_back((*outputs)[i * per + c]);
  }
  return out.dump();
}

caf::expected<std::string> torch_model::sync(const std::string& name, const std::string& body,
                                             const request_context& ctx) {
  {
    std::lock_guard<std::mutex> guard{impl_->access_mutex};
    auto now = std::chrono::duration<double>(clock_type::now() - impl_->start).count();
    if (auto err = impl_->access.admit(ctx, actors::access_action::manage, now))
      return err;
  }
  auto parsed = parse_sync_body(body);
  if (!parsed)
    return std::move(parsed.error());
  auto& message = parsed->message;
  auto& dir = parsed->dir;
  std::unique_lock<std::mutex> one_at_a_time{impl_->sync_mutex, std::try_to_lock};
  if (!one_at_a_time.owns_lock())
    return make_error(errc::unavailable,
                      "a sync of " + name + " is being applied: push this one again after it");
  if (message) {
    if (auto err = impl_->mirror->install(*message, impl_->held, impl_->configs))
      return err;
    dir = impl_->mirror->dir();
    if (dir.empty())
      return make_error(errc::out_of_order,
                        "a sync message with no link, to a model that holds none: send the "
                        "whole chain");
  }
  auto where = impl_->sharded ? std::filesystem::absolute(dir).string() : dir;
  // The dense sync is checked first: one of other inputs changes nothing, tables included.
  auto dense = ops::read_torch_dense_sync(where);
  if (!dense && !is(dense.error(), errc::not_found))
    return std::move(dense.error());
  if (dense && !ops::same_inputs(impl_->exported.spec, dense->spec))
    return make_error(errc::invalid_argument,
                      where + "/dense: a module of other inputs than the export's");
  auto chain = ops::follow_chain(*impl_->session, where, impl_->held, impl_->restore_timeout);
  if (!chain)
    return std::move(chain.error());
  if (dense && where + "/dense/" + dense->version != impl_->dense_version) {
    auto fresh = torch_script::load(dense->module);
    if (!fresh)
      return make_error(errc::corrupt_file, where + "/dense: " + context_of(fresh.error()));
    {
      std::lock_guard<std::mutex> guard{impl_->module_mutex};
      impl_->module = std::move(*fresh);
    }
    impl_->dense_version = where + "/dense/" + dense->version;
    impl_->dense_step = dense->step;
    impl_->dense_checkpoint = dense->version;
  }
  {
    std::lock_guard<std::mutex> guard{impl_->access_mutex};
    impl_->synced = *chain;
    impl_->synced_dense_step = impl_->dense_step;
    impl_->synced_dense_checkpoint = impl_->dense_checkpoint;
  }
  return nlohmann::json{{"model", name},
                        {"sync",
                         {{"checkpoint", chain->checkpoint},
                          {"step", chain->step},
                          {"dense_step", impl_->dense_step},
                          {"applied", chain->applied},
                          {"restored", chain->restored}}}}
    .dump();
}

std::string torch_model::describe(const std::string& name) const {
  auto inputs = nlohmann::json::array();
  for (auto& d : impl_->exported.spec.dense)
    inputs.push_back(d.name);
  for (auto& s : impl_->exported.spec.slots)
    for (auto& p : s.pools)
      inputs.push_back(p.feature);
  nlohmann::json out{{"name", name},
                     {"kind", "pytorch"},
                     {"version", impl_->exported.version},
                     {"embeddings", impl_->sharded ? "shards" : "in-process"},
                     {"inputs", inputs}};
  std::lock_guard<std::mutex> guard{impl_->access_mutex};
  if (impl_->synced)
    out["sync"] = {{"checkpoint", impl_->synced->checkpoint},
                   {"step", impl_->synced->step},
                   {"dense_step", impl_->synced_dense_step},
                   {"dense_checkpoint", impl_->synced_dense_checkpoint}};
  return out.dump();
}

} // namespace darcy::serving
