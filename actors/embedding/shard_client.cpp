#include "actors/embedding/shard_client.hpp"

#include <algorithm>
#include <optional>
#include <random>

#include <caf/scoped_actor.hpp>

#include "messages/error.hpp"
#include "runtime/ask.hpp"

namespace darcy::actors {

namespace {

uint64_t random_start() {
  std::random_device device;
  uint64_t x = 0;
  while (x == 0)
    x = (uint64_t{device()} << 32) | device();
  return x;
}

} // namespace

shard_client::shard_client(caf::actor_system& sys, shard_route route,
                           std::chrono::milliseconds timeout,
                           std::chrono::milliseconds attempt_timeout)
  : system_(&sys),
    shards_(std::move(route.shards)),
    timeout_(timeout),
    attempt_timeout_(attempt_timeout.count() > 0 ? std::min(attempt_timeout, timeout) : timeout),
    next_handle_(random_start()) {
  for (auto& cfg : route.configs)
    configs_.emplace(cfg.name, std::move(cfg));
}

config_finder shard_client::configs() const {
  return [this](const std::string& name) -> caf::expected<const de_config*> {
    auto i = configs_.find(name);
    if (i == configs_.end())
      return make_error(errc::unknown_embedding, name);
    return &i->second;
  };
}

// Sends request(self, s, wait) to every shard of `shards` at once, then hands each answer to
// on_reply(s, answer). A shard silent for its wait gets the request again, waiting twice as
// long, until timeout_ has passed. Every answer is awaited; the first error wins.
template <class Result, class Request, class OnReply>
caf::error shard_client::ask_shards(const std::vector<size_t>& shards, Request request,
                                    OnReply on_reply) const {
  caf::scoped_actor self{*system_};
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  using handle = decltype(request(self, size_t{0}, std::chrono::milliseconds{}));
  std::vector<std::optional<handle>> sent(shards.size());
  for (size_t i = 0; i < shards.size(); ++i)
    sent[i].emplace(request(self, shards[i], runtime::attempt_wait(attempt_timeout_, deadline)));
  caf::error first;
  for (size_t i = 0; i < shards.size(); ++i) {
    for (auto wait = attempt_timeout_;;) {
      caf::error err;
      sent[i]->receive([&](Result& answer) { err = on_reply(shards[i], answer); },
                       [&](caf::error& e) { err = std::move(e); });
      if (err != caf::sec::request_timeout || std::chrono::steady_clock::now() >= deadline) {
        if (err && !first)
          first = std::move(err);
        break;
      }
      wait *= 2;
      sent[i].emplace(request(self, shards[i], runtime::attempt_wait(wait, deadline)));
    }
  }
  return first;
}

caf::expected<shard_lookup> shard_client::lookup(const std::vector<table_keys>& tables,
                                                 const std::vector<std::span<float>>& out,
                                                 bool keep) const {
  auto dims = checked_dims(tables, configs());
  if (!dims)
    return std::move(dims.error());
  if (out.size() != tables.size())
    return make_error(errc::dimension_mismatch, std::to_string(out.size()) + " row buffers for " +
                                                  std::to_string(tables.size()) + " tables");
  for (size_t t = 0; t < tables.size(); ++t)
    if (out[t].size() != tables[t].keys.size() * (*dims)[t])
      return make_error(errc::dimension_mismatch,
                        std::to_string(out[t].size()) + " values for " +
                          std::to_string(tables[t].keys.size()) + " rows of '" + tables[t].name +
                          "' (dim " + std::to_string((*dims)[t]) + ")");
  auto route = std::make_shared<routed_batch>(tables, *dims, shards_.size());
  uint64_t handle = 0;
  while (keep && handle == 0)
    handle = next_handle_++;
  auto err = ask_shards<std::vector<shared_floats>>(
    route->shards(),
    [&](caf::scoped_actor& self, size_t s, std::chrono::milliseconds wait) {
      return self->request(shards_[s], wait, lookup_atom::value, route->part(s), handle);
    },
    [&](size_t s, const std::vector<shared_floats>& rows) { return route->scatter(s, rows, out); });
  if (err)
    return err;
  route->drop_keys();
  return shard_lookup{std::move(route), handle};
}

caf::error shard_client::backward(const routed_batch& route, uint64_t handle,
                                  const std::vector<std::span<const float>>& grads,
                                  int64_t step) const {
  if (handle == 0)
    return make_error(errc::invalid_argument, "backward on a lookup the shards did not keep");
  if (auto err = check_routed_gradients(route, grads, configs()))
    return err;
  std::vector<std::vector<shared_floats>> sums(shards_.size());
  for (auto s : route.shards())
    sums[s] = route.gather(s, grads);
  return ask_shards<ok_atom>(
    route.shards(),
    [&](caf::scoped_actor& self, size_t s, std::chrono::milliseconds wait) {
      return self->request(shards_[s], wait, backward_atom::value, handle, sums[s], step);
    },
    [](size_t, ok_atom) { return caf::error{}; });
}

} // namespace darcy::actors
