// The path from a trainer in another process straight to the shards of an embedding service:
// each batch is split by shard as the master splits it, and every part goes to its shard in
// one request, so that a lookup costs one hop each way instead of two through the master, and a
// backward pass is sent without waiting for the shards. The master still creates, saves and
// restores.
//
//   auto route = runtime::ask<shard_route>(sys, master, timeout, route_atom::value);
//   actors::shard_client shards{sys, std::move(*route), timeout, attempt_timeout};
//   auto kept = shards.lookup(tables, out, true);              // rows into `out`
//   shards.backward(*kept->route, kept->handle, grads, step);  // sent; answered later
//   shards.flush();                                            // every backward applied
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "actors/embedding/key_routing.hpp"
#include "messages/embedding/embedding_interfaces.hpp"

namespace darcy::actors {

/// A lookup the shards keep for backward: its route, and the handle they keep its keys under
/// (0 when none was kept).
struct shard_lookup {
  std::shared_ptr<const routed_batch> route;
  uint64_t handle = 0;
};

/// A lookup's deadline, and what a shard still silent then, or down, costs it.
struct lookup_deadline {
  std::chrono::steady_clock::time_point at;
  /// Leave the keys of the silent and the down shards with rows of zeros, and list those
  /// shards in `missing`, instead of failing the lookup with errc::deadline_exceeded (or the
  /// shard's being down).
  bool allow_partial = false;
  std::vector<size_t> missing;
};

/// Calls are serialized, so that a shard sees this client's requests in call order (they are
/// enqueued one after another, and reach another node over its one connection): a lookup after
/// a backward reads the rows that backward wrote.
class shard_client {
public:
  /// `route` is the master's answer to route(): shards in shard order, and the configs that
  /// requests are checked against. A shard that does not answer within `attempt_timeout` gets
  /// the request again (waiting twice as long each time), until `timeout` has passed.
  shard_client(caf::actor_system& sys, shard_route route, std::chrono::milliseconds timeout,
               std::chrono::milliseconds attempt_timeout);

  /// Waits for the backward passes still unanswered (see flush()).
  ~shard_client();

  shard_client(const shard_client&) = delete;
  shard_client& operator=(const shard_client&) = delete;

  /// Whether requests may name embedding `name` (it was in the route).
  bool knows(const std::string& name) const { return configs_.count(name) > 0; }

  /// Writes the rows of every key of `tables` (repeats allowed) to out[t], keys * dim values in
  /// input order, as the master's lookup does, with its errors (errc::empty_batch,
  /// errc::unknown_embedding, errc::batch_too_large) before any shard sees the batch, and
  /// errc::dimension_mismatch for an `out` buffer of the wrong size. With `keep`, each shard
  /// keeps its keys under one new handle for backward(), as it does for the master. Fails
  /// first with the error of an earlier backward, if one failed (see flush()). With a
  /// `deadline`, no shard is waited for past deadline->at (nor past the client's timeout).
  caf::expected<shard_lookup> lookup(const std::vector<table_keys>& tables,
                                     const std::vector<std::span<float>>& out, bool keep,
                                     lookup_deadline* deadline = nullptr) const;

  /// Sends each shard of `route` the summed gradients of its keys (one buffer per table, input
  /// order) to apply at `step` under `handle`, and returns without waiting for the shards.
  /// Every buffer is checked first (errc::dimension_mismatch, errc::non_finite,
  /// errc::read_only), so that a refused backward reaches no shard. A shard applies a handle
  /// once, so a resent request is harmless. Fails first with the error of an earlier backward,
  /// if one failed.
  caf::error backward(const routed_batch& route, uint64_t handle,
                      const std::vector<std::span<const float>>& grads, int64_t step) const;

  /// Sends each shard its part of `tables` to bring into its memory tier ahead of the lookup
  /// that will ask for them (the shard's prefetch), and returns at once: nothing is answered,
  /// and nothing a lookup answers changes. Tables the route does not name are passed over.
  void prefetch(std::vector<table_keys> tables) const;

  /// Waits until every shard has answered every backward sent so far, and returns the first
  /// failure among them: errc::not_found for a handle a shard no longer holds, or a timeout.
  /// The shards that answered ok have applied their part.
  caf::error flush() const;

private:
  config_finder configs() const;

  struct requester;

  std::vector<embedding_shard_actor> shards_;
  std::map<std::string, de_config> configs_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds attempt_timeout_;
  /// The next lookup handle: a random start, so that clients of one shard do not collide.
  mutable std::atomic<uint64_t> next_handle_;
  std::unique_ptr<requester> requester_;
};

} // namespace darcy::actors
