#include "apps/serving/torch_model.hpp"

#include <chrono>
#include <deque>
#include <future>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/serving/predict_envelope.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/torch/torch_export.hpp"
#include "ops/torch/torch_inputs.hpp"

#if DARCY_HAS_LIBTORCH
#include <torch/script.h>
#endif

namespace darcy::serving {

using clock_type = std::chrono::steady_clock;

namespace {

/// A request waiting for its batch: its instances, its deadline, and where its outputs go.
struct pending_request {
  ops::torch_batch batch;
  clock_type::time_point deadline;
  bool allow_partial = false;
  std::promise<caf::expected<std::vector<float>>> answer;
};

} // namespace

struct torch_model::impl {
  ops::torch_export exported;
  std::unique_ptr<ops::session> session;
  std::vector<de_config> configs;
  bool sharded = false;
  /// Numbers an instance's output has.
  size_t output_size = 1;
#if DARCY_HAS_LIBTORCH
  torch::jit::script::Module module;
#endif

  std::mutex access_mutex;
  actors::access_policy access;
  clock_type::time_point start = clock_type::now();

  /// Requests that came while a batch ran; `running` while one thread runs batches.
  std::mutex queue_mutex;
  std::deque<std::shared_ptr<pending_request>> queue;
  bool running = false;

  /// The outputs of batch `b`, instances × output_size.
  caf::expected<std::vector<float>> run(const ops::torch_batch& b, clock_type::time_point deadline,
                                        bool allow_partial);
  /// Runs queued requests in batches of at most max_predict_instances until none is left.
  void drain();
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
#if DARCY_HAS_LIBTORCH
  auto n = static_cast<int64_t>(b.instances);
  std::vector<torch::jit::IValue> inputs;
  for (size_t d = 0; d < b.dense.size(); ++d) {
    std::vector<int64_t> shape{n};
    auto& more = exported.spec.dense[d].shape;
    shape.insert(shape.end(), more.begin(), more.end());
    inputs.emplace_back(torch::from_blob(const_cast<float*>(b.dense[d].data()), shape));
  }
  for (size_t s = 0; s < slots->size(); ++s)
    inputs.emplace_back(torch::from_blob(
      (*slots)[s].data(), {n, static_cast<int64_t>(exported.spec.slots[s].width())}));
  try {
    c10::InferenceMode guard;
    auto out = module.forward(inputs).toTensor().to(torch::kFloat).contiguous();
    if (out.dim() < 1 || out.size(0) != n ||
        static_cast<size_t>(out.numel()) != b.instances * output_size)
      return make_error(errc::dimension_mismatch, "the module answered " +
                                                    std::to_string(out.numel()) + " numbers for " +
                                                    std::to_string(b.instances) + " instances of " +
                                                    std::to_string(output_size));
    auto* data = out.data_ptr<float>();
    return std::vector<float>(data, data + out.numel());
  } catch (const std::exception& e) {
    return make_error(errc::invalid_argument, std::string{"the module: "} + e.what());
  }
#else
  (void)slots;
  return make_error(errc::unsupported, "this build has no LibTorch");
#endif
}

void torch_model::impl::drain() {
  std::unique_lock<std::mutex> lock{queue_mutex};
  while (!queue.empty()) {
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
    size_t at = 0;
    for (auto& p : taken) {
      auto count = p->batch.instances * output_size;
      if (out)
        p->answer.set_value(std::vector<float>(out->begin() + static_cast<ptrdiff_t>(at),
                                               out->begin() + static_cast<ptrdiff_t>(at + count)));
      else
        p->answer.set_value(out.error());
      at += count;
    }
    lock.lock();
  }
  running = false;
}

torch_model::torch_model(std::unique_ptr<impl> i) : impl_(std::move(i)) {
}

torch_model::~torch_model() = default;

caf::expected<std::unique_ptr<torch_model>> torch_model::load(
  const std::string& dir, access_rules rules, const ops::estimator::embedding_placement& where) {
#if !DARCY_HAS_LIBTORCH
  (void)rules;
  (void)where;
  return make_error(errc::unsupported, dir +
                                         " is a PyTorch export, and this build has no "
                                         "LibTorch (install libtorch-dev, build again)");
#else
  auto exported = ops::read_torch_export(dir);
  if (!exported)
    return std::move(exported.error());
  auto m = std::make_unique<impl>();
  try {
    std::istringstream bytes{exported->module};
    m->module = torch::jit::load(bytes);
    m->module.eval();
  } catch (const std::exception& e) {
    return make_error(errc::corrupt_file, dir + ": LibTorch cannot load its module: " + e.what());
  }
  exported->module.clear();
  m->exported = std::move(*exported);
  for (auto d : m->exported.spec.output)
    m->output_size *= static_cast<size_t>(d);
  auto opened = ops::estimator::open_serving_tables(m->exported.embeddings, where, m->configs);
  if (!opened)
    return std::move(opened.error());
  m->session = std::move(*opened);
  m->sharded = where.cluster.has_value();
  m->access = actors::access_policy{std::move(rules)};
  return std::unique_ptr<torch_model>{new torch_model{std::move(m)}};
#endif
}

caf::expected<std::string> torch_model::predict(const std::string& name, const std::string& body,
                                                const request_context& ctx,
                                                uint32_t max_deadline_ms) {
  {
    std::lock_guard<std::mutex> guard{impl_->access_mutex};
    auto now = std::chrono::duration<double>(clock_type::now() - impl_->start).count();
    if (auto err = impl_->access.admit(ctx, actors::access_action::query, now))
      return err;
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
  auto answer = p->answer.get_future();
  bool lead = false;
  {
    std::lock_guard<std::mutex> guard{impl_->queue_mutex};
    impl_->queue.push_back(p);
    lead = !impl_->running;
    impl_->running = true;
  }
  if (lead) // this thread runs batches until the queue is empty, its own among them
    impl_->drain();
  auto outputs = answer.get();
  if (!outputs)
    return std::move(outputs.error());
  nlohmann::json out{{"model", name}, {"version", impl_->exported.version}};
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

caf::expected<std::string> torch_model::sync(const std::string& name, const std::string&,
                                             const request_context&) {
  return make_error(errc::unsupported, name + ": a PyTorch export follows no syncs yet");
}

std::string torch_model::describe(const std::string& name) const {
  auto inputs = nlohmann::json::array();
  for (auto& d : impl_->exported.spec.dense)
    inputs.push_back(d.name);
  for (auto& s : impl_->exported.spec.slots)
    for (auto& p : s.pools)
      inputs.push_back(p.feature);
  return nlohmann::json{{"name", name},
                        {"kind", "pytorch"},
                        {"version", impl_->exported.version},
                        {"embeddings", impl_->sharded ? "shards" : "in-process"},
                        {"inputs", inputs}}
    .dump();
}

} // namespace darcy::serving
