#include "ops/session.hpp"

#include <gtest/gtest.h>

#include "actors/actor_types.hpp"
#include "messages/error.hpp"
#include "runtime/node_services.hpp"

namespace darcy::ops {
namespace {

de_config table(std::string name) {
  de_config c;
  c.name = std::move(name);
  c.dim = 4;
  return c;
}

TEST(session, an_attached_session_uses_the_service_another_published_and_leaves_it_running) {
  runtime::system_config cfg{"attach", 2};
  actors::register_actor_types(cfg);
  caf::actor_system sys{cfg};
  runtime::node_options node;
  node.name = "member";
  auto services = runtime::start_node_services(sys, node, std::nullopt);
  auto joined = runtime::join_cluster(sys, services, node, {"in-process", 0});
  if (!joined) {
    services.stop();
    FAIL() << render(joined.error());
  }
  {
    auto owner = session::attach(sys, {.shards = 1});
    ASSERT_TRUE(owner) << render(owner.error());
    EXPECT_FALSE((*owner)->in_process());
    ASSERT_FALSE((*owner)->publish_embeddings("test.embeddings", "member"));
    {
      auto user = session::attach(sys, {.embedding_service = "test.embeddings"});
      ASSERT_TRUE(user) << render(user.error());
      auto theirs = (*user)->embeddings();
      ASSERT_TRUE(theirs) << render(theirs.error());
      EXPECT_EQ(*theirs, *(*owner)->embeddings()) << "one master, not a second service";
      EXPECT_FALSE((*user)->ensure_embedding(table("words")));
      EXPECT_TRUE((*user)->sampler()) << "the sampler is published beside the master";
    }
    EXPECT_FALSE((*owner)->ensure_embedding(table("more"))) << "the user's end did not stop the service";

    auto missing = session::attach(sys, {.embedding_service = "nobody.published.this"});
    ASSERT_TRUE(missing);
    auto none = (*missing)->embeddings();
    ASSERT_FALSE(none);
    EXPECT_TRUE(is(none.error(), errc::unknown_service)) << render(none.error());
  }
  services.stop();
}

TEST(session, attach_and_publish_refuse_what_cannot_work) {
  runtime::system_config cfg{"alone", 1};
  caf::actor_system sys{cfg};
  auto attached = session::attach(sys, {});
  ASSERT_FALSE(attached);
  EXPECT_TRUE(is(attached.error(), errc::node_unreachable)) << render(attached.error());

  auto local = session::open({});
  ASSERT_TRUE(local) << render(local.error());
  auto err = (*local)->publish_embeddings("x", "local");
  EXPECT_TRUE(is(err, errc::invalid_config)) << render(err);
}

} // namespace
} // namespace darcy::ops
