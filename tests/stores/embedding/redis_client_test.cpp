// stores/redis_client: the redis:// locations it takes, and a real redis-server on a free port:
// binary-safe pipelines with every reply type, an error reply as an error, one resend after a
// dropped connection, a restart noticed, and a Redis that stays away named in the error.
#include "stores/embedding/redis_client.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/testing/redis_server.hpp"

namespace darcy::stores {
namespace {

using namespace std::chrono_literals;

TEST(redis_client, locations_parse_or_name_what_is_wrong) {
  struct {
    const char* url;
    const char* host;
    uint16_t port;
    const char* prefix;
    std::optional<uint32_t> shard;
  } good[] = {
    {"redis://h", "h", 6379, "darcy", std::nullopt},
    {"redis://10.0.0.1:7000", "10.0.0.1", 7000, "darcy", std::nullopt},
    {"redis://h:1/items", "h", 1, "items", std::nullopt},
    {"redis://h:1/shard-3", "h", 1, "darcy", 3},
    {"redis://h:1/a/b/shard-0", "h", 1, "a/b", 0},
  };
  for (auto& c : good) {
    auto l = parse_redis_location(c.url);
    ASSERT_TRUE(l) << c.url << ": " << render(l.error());
    EXPECT_EQ(l->host, c.host) << c.url;
    EXPECT_EQ(l->port, c.port) << c.url;
    EXPECT_EQ(l->prefix, c.prefix) << c.url;
    EXPECT_EQ(l->shard, c.shard) << c.url;
  }
  struct {
    const char* url;
    const char* mentions;
  } bad[] = {
    {"http://h:1", "must start with redis://"},
    {"redis://:1", "no host"},
    {"redis://h:0", "bad port"},
    {"redis://h:65536", "bad port"},
    {"redis://h:x", "bad port"},
    {"redis://h:1/shard-", "bad shard number"},
    {"redis://h:1/shard-2x", "bad shard number"},
  };
  for (auto& c : bad) {
    auto l = parse_redis_location(c.url);
    ASSERT_FALSE(l) << c.url;
    EXPECT_TRUE(is(l.error(), errc::invalid_config)) << c.url;
    EXPECT_NE(render(l.error()).find(c.mentions), std::string::npos) << render(l.error());
    EXPECT_NE(render(l.error()).find(c.url), std::string::npos) << render(l.error());
  }
}

class redis_client_test : public ::testing::Test {
protected:
  void SetUp() override {
    auto s = testing::redis_server::start({});
    if (!s && is(s.error(), errc::not_found))
      GTEST_SKIP() << render(s.error());
    ASSERT_TRUE(s) << render(s.error());
    server = std::move(*s);
    auto c = redis_client::connect({"127.0.0.1", server->port()}, 2000ms);
    ASSERT_TRUE(c) << render(c.error());
    client = std::move(*c);
  }

  std::unique_ptr<testing::redis_server> server;
  std::unique_ptr<redis_client> client;
};

TEST_F(redis_client_test, a_pipeline_answers_every_reply_type_in_order_binary_safe) {
  std::string key{"k\0ey", 4}, value{"v\0al\xff", 5};
  auto replies = client->run({{"SET", key, value},
                              {"GET", key},
                              {"GET", "absent"},
                              {"SADD", "set", "a", "b"},
                              {"MGET", key, "absent"},
                              {"NOSUCHCOMMAND"}});
  ASSERT_TRUE(replies) << render(replies.error());
  ASSERT_EQ(replies->size(), 6u);
  auto& r = *replies;
  EXPECT_EQ(r[0].type, redis_reply::kind::status);
  EXPECT_EQ(r[1].type, redis_reply::kind::string);
  EXPECT_EQ(r[1].str, value);
  EXPECT_EQ(r[2].type, redis_reply::kind::nil);
  EXPECT_EQ(r[3].type, redis_reply::kind::integer);
  EXPECT_EQ(r[3].integer, 2);
  ASSERT_EQ(r[4].type, redis_reply::kind::array);
  ASSERT_EQ(r[4].elements.size(), 2u);
  EXPECT_EQ(r[4].elements[0].str, value);
  EXPECT_EQ(r[4].elements[1].type, redis_reply::kind::nil);
  EXPECT_EQ(r[5].type, redis_reply::kind::error);
  // call() turns an error reply into an error naming the command.
  auto refused = client->call({"NOSUCHCOMMAND"});
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::io_error));
  EXPECT_NE(render(refused.error()).find("NOSUCHCOMMAND"), std::string::npos);
}

TEST_F(redis_client_test, a_dropped_connection_is_opened_again_and_the_pipeline_sent_once_more) {
  ASSERT_TRUE(client->call({"SET", "x", "1"}));
  ASSERT_FALSE(server->drop_connections());
  auto again = client->run({{"INCR", "x"}, {"GET", "x"}});
  ASSERT_TRUE(again) << render(again.error());
  EXPECT_EQ((*again)[1].str, "2");
  EXPECT_EQ(client->restarts(), 0u) << "the same Redis, not a restart";
}

TEST_F(redis_client_test, a_restarted_redis_is_counted_and_one_that_stays_away_is_named) {
  ASSERT_TRUE(client->call({"PING"}));
  server->kill();
  ASSERT_FALSE(server->restart());
  ASSERT_TRUE(client->call({"PING"}));
  EXPECT_EQ(client->restarts(), 1u);
  server->kill();
  auto gone = client->call({"PING"});
  ASSERT_FALSE(gone);
  EXPECT_TRUE(is(gone.error(), errc::io_error));
  EXPECT_NE(render(gone.error()).find(client->address()), std::string::npos)
    << render(gone.error());
  auto never = redis_client::connect({"127.0.0.1", server->port()}, 500ms);
  ASSERT_FALSE(never);
  EXPECT_NE(render(never.error()).find("127.0.0.1:" + std::to_string(server->port())),
            std::string::npos);
}

} // namespace
} // namespace darcy::stores
