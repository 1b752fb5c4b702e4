#include "actors/embedding/shard_client.hpp"

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>

#include <caf/scoped_actor.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/log.hpp"

namespace darcy::actors {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A request in flight to one shard: `send` sends it (again) with the given wait.
template <class Handle>
struct in_flight {
  std::function<Handle(milliseconds)> send;
  milliseconds wait;
  steady_clock::time_point deadline;
  std::optional<Handle> handle;
};

template <class Handle>
in_flight<Handle> launch(std::function<Handle(milliseconds)> send, milliseconds attempt,
                         milliseconds timeout) {
  in_flight<Handle> f{std::move(send), attempt, steady_clock::now() + timeout, std::nullopt};
  f.handle.emplace(f.send(runtime::attempt_wait(f.wait, f.deadline)));
  return f;
}

// Waits for the answer of `f`, sending the request again, waiting twice as long each time,
// while the shard is silent and the deadline has not passed; on_value(answer) is the result.
template <class Result, class Handle, class OnValue>
caf::error await(in_flight<Handle>& f, OnValue on_value) {
  for (;;) {
    caf::error err;
    f.handle->receive([&](Result& answer) { err = on_value(answer); },
                      [&](caf::error& e) { err = std::move(e); });
    if (err != caf::sec::request_timeout || steady_clock::now() >= f.deadline)
      return err;
    f.wait *= 2;
    f.handle.emplace(f.send(runtime::attempt_wait(f.wait, f.deadline)));
  }
}

using ack_handle = decltype(std::declval<caf::scoped_actor&>()->request(
  std::declval<const embedding_shard_actor&>(), milliseconds{}, backward_atom::value, uint64_t{},
  std::vector<shared_floats>{}, int64_t{}));

} // namespace

// Every call has its own scoped actor: a persistent one would collect the timeout message of
// each answered request, which CAF delivers after the wait and a blocking actor never drops.
// The scoped actor of a backward lives until its answers are collected.
struct shard_client::requester {
  explicit requester(caf::actor_system& sys) : system(sys) {}

  /// Held by every call, so that requests are enqueued in call order.
  std::mutex mutex;
  caf::actor_system& system;
  /// The last backward's sender, and its requests not answered yet.
  std::unique_ptr<caf::scoped_actor> ack_self;
  std::vector<in_flight<ack_handle>> acks;

  /// Waits for every answer in `acks`; the first failure.
  caf::error collect() {
    caf::error first;
    for (auto& ack : acks)
      if (auto err = await<ok_atom>(ack, [](ok_atom) { return caf::error{}; }); err && !first)
        first = std::move(err);
    acks.clear();
    ack_self.reset();
    return first;
  }
};

shard_client::shard_client(caf::actor_system& sys, shard_route route, milliseconds timeout,
                           milliseconds attempt_timeout)
  : shards_(std::move(route.shards)),
    timeout_(timeout),
    attempt_timeout_(attempt_timeout.count() > 0 ? std::min(attempt_timeout, timeout) : timeout),
    next_handle_(runtime::random_request_id()),
    requester_(std::make_unique<requester>(sys)) {
  for (auto& cfg : route.configs)
    configs_.emplace(cfg.name, std::move(cfg));
}

shard_client::~shard_client() {
  if (auto err = flush())
    runtime::log_warn("shard client: a backward pass sent last failed: {}", render(err));
}

config_finder shard_client::configs() const {
  return [this](const std::string& name) -> caf::expected<const de_config*> {
    auto i = configs_.find(name);
    if (i == configs_.end())
      return make_error(errc::unknown_embedding, name);
    return &i->second;
  };
}

caf::expected<shard_lookup> shard_client::lookup(const std::vector<table_keys>& tables,
                                                 const std::vector<std::span<float>>& out,
                                                 bool keep, lookup_deadline* deadline) const {
  auto dims = checked_dims(tables, configs(), out);
  if (!dims)
    return std::move(dims.error());
  auto route = std::make_shared<routed_batch>(tables, *dims, shards_.size());
  uint64_t handle = 0;
  while (keep && handle == 0)
    handle = next_handle_++;
  auto timeout = timeout_;
  if (deadline) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline->at - steady_clock::now());
    timeout = std::clamp(left, milliseconds{1}, timeout_);
    if (deadline->allow_partial) // a silent shard's keys keep these rows
      for (auto& o : out)
        std::fill(o.begin(), o.end(), 0.0f);
  }
  auto attempt = std::min(attempt_timeout_, timeout);
  std::lock_guard<std::mutex> guard{requester_->mutex};
  caf::scoped_actor self{requester_->system};
  using handle_type =
    decltype(self->request(shards_[0], milliseconds{}, lookup_atom::value, route->part(0), handle));
  // Every part is sent before any answer is awaited, so the shards work at once.
  std::vector<std::pair<size_t, in_flight<handle_type>>> sent;
  for (auto s : route->shards())
    sent.emplace_back(s, launch<handle_type>(
                           [&, s](milliseconds wait) {
                             return self->request(shards_[s], wait, lookup_atom::value,
                                                  route->part(s), handle);
                           },
                           attempt, timeout));
  caf::error first;
  for (auto& [s, f] : sent) {
    auto err = await<std::vector<shared_floats>>(
      f,
      [&, s = s](const std::vector<shared_floats>& rows) { return route->scatter(s, rows, out); });
    bool down =
      err == caf::sec::request_receiver_down || err == caf::sec::no_route_to_receiving_node;
    if (err && deadline && deadline->allow_partial && down) {
      deadline->missing.push_back(s);
      continue;
    }
    if (err && deadline && err == caf::sec::request_timeout) {
      if (deadline->allow_partial) {
        deadline->missing.push_back(s);
        continue;
      }
      err = make_error(errc::deadline_exceeded,
                       "embedding shard " + std::to_string(s) + " did not answer in time");
    }
    if (err && !first)
      first = std::move(err);
  }
  if (first)
    return first;
  route->drop_keys();
  return shard_lookup{std::move(route), handle};
}

caf::error shard_client::backward(const routed_batch& route, uint64_t handle,
                                  const std::vector<std::span<const float>>& grads,
                                  int64_t step) const {
  std::lock_guard<std::mutex> guard{requester_->mutex};
  if (auto err = requester_->collect())
    return err;
  if (handle == 0)
    return make_error(errc::invalid_argument, "backward on a lookup the shards did not keep");
  if (auto err = check_routed_gradients(route, grads, configs()))
    return err;
  requester_->ack_self = std::make_unique<caf::scoped_actor>(requester_->system);
  auto* self = requester_->ack_self.get();
  for (auto s : route.shards())
    requester_->acks.push_back(launch<ack_handle>(
      [self, shard = shards_[s], handle, sums = route.gather(s, grads), step](milliseconds wait) {
        return (*self)->request(shard, wait, backward_atom::value, handle, sums, step);
      },
      attempt_timeout_, timeout_));
  return {};
}

void shard_client::prefetch(std::vector<table_keys> tables) const {
  std::erase_if(tables, [&](const table_keys& t) { return t.keys.empty() || !knows(t.name); });
  if (tables.empty())
    return;
  // Dims do not matter: no row is copied.
  routed_batch route{tables, std::vector<uint32_t>(tables.size(), 1), shards_.size()};
  std::lock_guard<std::mutex> guard{requester_->mutex};
  for (auto s : route.shards())
    caf::anon_send(shards_[s], prefetch_atom::value, route.part(s));
}

caf::error shard_client::flush() const {
  std::lock_guard<std::mutex> guard{requester_->mutex};
  return requester_->collect();
}

} // namespace darcy::actors
