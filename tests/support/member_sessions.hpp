// Sessions on a one-member in-process cluster, for tests of the paths that only a cluster has:
// an embedding service published by one session and used by another straight to its shards.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "actors/actor_types.hpp"
#include "messages/error.hpp"
#include "ops/session.hpp"
#include "runtime/node_services.hpp"

namespace darcy::test {

/// Runs `body` on an actor system that is the only member ("member") of an in-process cluster.
inline void on_a_member(const char* name, const std::function<void(caf::actor_system&)>& body) {
  runtime::system_config cfg{name, 2};
  actors::register_actor_types(cfg);
  caf::actor_system sys{cfg};
  runtime::node_options node;
  node.name = "member";
  auto services = runtime::start_node_services(sys, node, std::nullopt);
  auto joined = runtime::join_cluster(sys, services, node, {"in-process", 0});
  if (joined)
    body(sys);
  else
    ADD_FAILURE() << render(joined.error());
  services.stop();
}

/// Two sessions on the member: `owner` serves 2 embedding shards as "test.embeddings", and
/// `user` attaches to that service with direct_shards. Null (after a failure recorded in the
/// test) when either cannot start.
inline std::pair<std::unique_ptr<ops::session>, std::unique_ptr<ops::session>>
owner_and_direct_user(caf::actor_system& sys) {
  auto owner = ops::session::attach(sys, {.shards = 2});
  if (!owner) {
    ADD_FAILURE() << render(owner.error());
    return {};
  }
  if (auto err = (*owner)->publish_embeddings("test.embeddings", "member")) {
    ADD_FAILURE() << render(err);
    return {};
  }
  auto user =
    ops::session::attach(sys, {.embedding_service = "test.embeddings", .direct_shards = true});
  if (!user) {
    ADD_FAILURE() << render(user.error());
    return {};
  }
  return {std::move(*owner), std::move(*user)};
}

} // namespace darcy::test
