// The flat wire format between node processes: keys of any bytes and length, and rows, cross
// from the master in this process to shards on two `darcy node` processes and back unchanged.
#include <random>

#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "actors/embedding/key_routing.hpp"
#include "ops/testing/redis_server.hpp"
#include "stores/embedding/redis_store.hpp"
#include "tests/integration/cluster_fixture.hpp"

namespace darcy::test {
namespace {

using strings = std::vector<std::string>;
using floats = std::vector<float>;

class embedding_wire : public cluster_test {};

de_config wire_config(const std::string& name, uint32_t dim) {
  de_config cfg;
  cfg.name = name;
  cfg.dim = dim;
  cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
  return cfg;
}

TEST_F(embedding_wire, KeysOfAnyBytesAndRowsCrossTwoNodeProcessesUnchanged) {
  auto a = node("a");
  auto b = node("b", runtime::to_string(a.address));
  // Nothing here is meant to time out: a loaded CI machine gets the full patience.
  auto s = connect(a.address, patience);
  auto remote = s->embeddings();
  ASSERT_TRUE(remote) << render(remote.error());
  // The reference: the same service with its shards in this process.
  auto local =
    s->system().spawn(actors::embedding_master,
                      actors::embedding_master_options{actors::spawn_shards(s->system(), 2)});
  strings keys = {"",
                  std::string(1, '\0'),
                  std::string("nul\0inside", 10),
                  std::string(65536, 'k'),
                  std::string(65535, 'k') + std::string(1, '\0'),
                  "plain",
                  ""};
  for (int i = 0; i < 300; ++i)
    keys.push_back("w" + std::to_string(i));
  strings ctx = {"", "c1", std::string(70000, 'c')};
  for (auto& m : {*remote, local}) {
    ASSERT_TRUE(
      runtime::ask<ok_atom>(s->system(), m, patience, create_atom::value, wire_config("words", 8)));
    ASSERT_TRUE(
      runtime::ask<ok_atom>(s->system(), m, patience, create_atom::value, wire_config("ctx", 3)));
  }
  std::mt19937 rng{5};
  std::normal_distribution<float> noise{0, 1};
  floats word_grads(keys.size() * 8), ctx_grads(ctx.size() * 3);
  for (auto& g : word_grads)
    g = noise(rng);
  for (auto& g : ctx_grads)
    g = noise(rng);
  std::vector<std::vector<floats>> seen;
  for (auto& m : {*remote, local}) {
    std::vector<table_keys> tables = {{"words", actors::hash_keys(keys)},
                                      {"ctx", actors::hash_keys(ctx)}};
    auto reply =
      runtime::ask<lookup_reply>(s->system(), m, patience, lookup_atom::value, tables, true);
    ASSERT_TRUE(reply) << render(error_of(reply));
    ASSERT_TRUE(runtime::ask<ok_atom>(
      s->system(), m, patience, backward_atom::value, reply->handle,
      std::vector<shared_floats>{shared_floats{word_grads}, shared_floats{ctx_grads}}, int64_t{1}));
    auto after =
      runtime::ask<lookup_reply>(s->system(), m, patience, lookup_atom::value, tables, false);
    ASSERT_TRUE(after) << render(error_of(after));
    std::vector<floats> rows;
    for (auto* r : {&*reply, &*after})
      for (auto& x : r->rows)
        rows.emplace_back(x.values().begin(), x.values().end());
    seen.push_back(std::move(rows));
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], seen[1]);
  // Before and after differ: the backward crossed too.
  EXPECT_NE(seen[0][0], seen[0][2]);
  EXPECT_NE(seen[0][1], seen[0][3]);
  auto stats = runtime::ask<embedding_stats>(s->system(), *remote, patience, stats_atom::value,
                                             std::string{"words"});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->rows, keys.size() - 1);
}

TEST_F(embedding_wire, NodesShareOneRedisAndAReaderServesTheRowsWithNoShardServer) {
  auto redis = darcy::testing::redis_server::start({});
  ASSERT_TRUE(redis) << render(error_of(redis));
  auto a = node("a");
  auto b = node("b", runtime::to_string(a.address));
  auto s = connect(a.address, patience);
  auto remote = s->embeddings();
  ASSERT_TRUE(remote) << render(remote.error());
  auto cfg = wire_config("shared", 8);
  cfg.backend = backend_kind::redis;
  cfg.path = (*redis)->url("wire");
  cfg.staleness_ms = 0;
  ASSERT_TRUE(runtime::ask<ok_atom>(s->system(), *remote, patience, create_atom::value, cfg));
  strings keys;
  for (int i = 0; i < 200; ++i)
    keys.push_back("item" + std::to_string(i));
  std::vector<table_keys> tables = {{"shared", actors::hash_keys(keys)}};
  auto reply =
    runtime::ask<lookup_reply>(s->system(), *remote, patience, lookup_atom::value, tables, true);
  ASSERT_TRUE(reply) << render(error_of(reply));
  ASSERT_TRUE(runtime::ask<ok_atom>(
    s->system(), *remote, patience, backward_atom::value, reply->handle,
    std::vector<shared_floats>{shared_floats{floats(keys.size() * 8, 0.5f)}}, int64_t{1}));
  auto after =
    runtime::ask<lookup_reply>(s->system(), *remote, patience, lookup_atom::value, tables, false);
  ASSERT_TRUE(after) << render(error_of(after));
  floats served(after->rows[0].values().begin(), after->rows[0].values().end());
  // Every shard, on both node processes, wrote to the one Redis; the reader needs none of them.
  auto reader = stores::redis_store::open_reader((*redis)->url("wire"), "shared", 1 << 20, 0);
  ASSERT_TRUE(reader) << render(error_of(reader));
  EXPECT_EQ((*reader)->stats().rows, keys.size());
  std::vector<std::string_view> views(keys.begin(), keys.end());
  floats read(keys.size() * 8);
  ASSERT_FALSE((*reader)->lookup(views, read));
  EXPECT_EQ(read, served);
}

} // namespace
} // namespace darcy::test
