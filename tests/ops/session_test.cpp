#include "ops/session.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "actors/embedding/shard_client.hpp"
#include "compute/hash.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "tests/support/member_sessions.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops {
namespace {

using test::on_a_member;
using test::owner_and_direct_user;

de_config table(std::string name) {
  de_config c;
  c.name = std::move(name);
  c.dim = 4;
  return c;
}

TEST(session, an_attached_session_uses_the_service_another_published_and_leaves_it_running) {
  on_a_member("attach", [](caf::actor_system& sys) {
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
    EXPECT_FALSE((*owner)->ensure_embedding(table("more")))
      << "the user's end did not stop the service";

    auto missing = session::attach(sys, {.embedding_service = "nobody.published.this"});
    ASSERT_TRUE(missing);
    auto none = (*missing)->embeddings();
    ASSERT_FALSE(none);
    EXPECT_TRUE(is(none.error(), errc::unknown_service)) << render(none.error());
  });
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

TEST(session, direct_shards_train_the_rows_the_master_serves_and_keep_its_errors) {
  on_a_member("direct", [](caf::actor_system& sys) {
    auto [owner, user] = owner_and_direct_user(sys);
    ASSERT_TRUE(owner && user);
    EXPECT_EQ(user->shard_client(), nullptr) << "no route before an embedding is ensured";
    auto words = table("words");
    words.optimizer = {optimizer_kind::sgd, 0.5f};
    std::vector<std::string> keys{"bank", "money", "bank", "river"};
    auto mine = dynamic_embedding_lookup(*user, keys, words, "words");
    ASSERT_TRUE(mine) << render(mine.error());
    ASSERT_NE(user->shard_client(), nullptr) << "the master handed out its shards";
    auto served = [&] {
      auto r = dynamic_embedding_lookup(*owner, keys, words, "words", false);
      EXPECT_TRUE(r) << render(error_of(r));
      return r ? r->rows : matrix{};
    };
    auto before = served();
    EXPECT_EQ(mine->rows, before) << "the shards answer what the master answers";

    matrix nan_grads = matrix::Ones(4, 4);
    nan_grads(2, 1) = std::nanf("");
    EXPECT_TRUE(is(mine->handle.backward(nan_grads, 1), errc::non_finite));
    EXPECT_EQ(served(), before) << "a refused backward changes nothing";

    matrix grads = matrix::Ones(4, 4);
    ASSERT_FALSE(mine->handle.backward(grads, 1));
    ASSERT_FALSE(flush(*user)) << "the shards applied it";
    matrix expected = before;
    // sgd at 0.5 on the summed gradients: "bank" appears twice.
    for (Eigen::Index r : {0, 2})
      expected.row(r).array() -= 1.0f;
    for (Eigen::Index r : {1, 3})
      expected.row(r).array() -= 0.5f;
    EXPECT_TRUE(served().isApprox(expected)) << "the backward reached the shards";
    EXPECT_TRUE(is(mine->handle.backward(grads, 2), errc::not_found)) << "a handle is used once";
  });
}

TEST(session, a_new_embedding_reports_the_failed_backward_of_the_client_it_replaces) {
  on_a_member("replace", [](caf::actor_system& sys) {
    auto [owner, user] = owner_and_direct_user(sys);
    ASSERT_TRUE(owner && user);
    std::vector<std::string> keys{"bank", "river"};
    ASSERT_TRUE(dynamic_embedding_lookup(*user, keys, table("words"), "words"));
    auto client = user->shard_client();
    ASSERT_NE(client, nullptr);
    std::vector<table_keys> tables{{"words", {}}};
    for (auto& k : keys)
      tables[0].keys.push_back(k, compute::hash_key(k));
    std::vector<float> rows(2 * 4), grads(2 * 4, 1.0f);
    auto kept = client->lookup(tables, {rows}, true);
    ASSERT_TRUE(kept) << render(error_of(kept));
    ASSERT_FALSE(client->backward(*kept->route, kept->handle + 1000, {grads}, 1))
      << "sent to a handle no shard holds: not answered yet";

    auto places = dynamic_embedding_lookup(*user, keys, table("places"), "places");
    EXPECT_TRUE(is(error_of(places), errc::not_found)) << render(error_of(places));
    EXPECT_NE(user->shard_client(), client) << "the new embedding replaced the client";
    EXPECT_FALSE(client->flush()) << "the failure was taken from the old client";
    EXPECT_TRUE(dynamic_embedding_lookup(*user, keys, table("places"), "places"))
      << "reported once; the embedding was created";
  });
}

} // namespace
} // namespace darcy::ops

namespace darcy::ops {
namespace {

TEST(session, tables_in_memory_creates_a_table_on_disk_in_memory_and_names_it) {
  test::temp_dir dir{"session_in_memory"};
  auto s = session::open({.tables_in_memory = true});
  ASSERT_TRUE(s) << render(s.error());
  de_config cfg;
  cfg.name = "items";
  cfg.dim = 4;
  cfg.backend = backend_kind::leveldb;
  cfg.path = dir.path() + "/items";
  ASSERT_TRUE(dynamic_embedding_lookup(**s, {"a", "b"}, cfg, "items", false));
  EXPECT_FALSE(std::filesystem::exists(cfg.path)) << "no database was opened";
  auto st = stats(**s, "items");
  ASSERT_TRUE(st) << render(st.error());
  EXPECT_EQ(st->rows, 2u);
  EXPECT_EQ(st->disk_bytes, 0u);
  EXPECT_EQ((*s)->embedding_names(), std::set<std::string>{"items"});
}

} // namespace
} // namespace darcy::ops
