#include "actors/embedding/embedding_master.hpp"

#include <random>

#include "actors/embedding/embedding_shard.hpp"
#include "runtime/ask.hpp"
#include "runtime/chaos.hpp"
#include "stores/de_config.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;
using strings = std::vector<std::string>;
using floats = std::vector<float>;

de_config words_config() {
  de_config cfg;
  cfg.name = "words";
  cfg.dim = 3;
  cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
  return cfg;
}

class embedding_master_test : public test::system_fixture {
protected:
  embedding_master_actor start(size_t shards, size_t max_in_flight = 64, size_t max_queued = 1024) {
    embedding_master_options opts;
    opts.shards = spawn_shards(sys, shards);
    opts.max_in_flight = max_in_flight;
    opts.max_queued = max_queued;
    auto master = sys.spawn(embedding_master, opts);
    EXPECT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, words_config()));
    return master;
  }

  floats lookup(const embedding_master_actor& m, const strings& keys) {
    auto rows = ask<floats>(sys, m, test::patience, lookup_atom::value, std::string{"words"},
                            keys);
    EXPECT_TRUE(rows) << render(error_of(rows));
    return rows ? *rows : floats{};
  }

  caf::error update(const embedding_master_actor& m, const strings& keys, const floats& grads) {
    return error_of(ask<ok_atom>(sys, m, test::patience, update_atom::value,
                                 std::string{"words"}, keys, grads, int64_t{1}));
  }
};

TEST_F(embedding_master_test, FourShardsAgreeWithOneStoreIncludingDuplicateKeys) {
  auto master = start(4);
  auto reference = stores::make_store(words_config());
  ASSERT_TRUE(reference);
  std::mt19937 rng{11};
  std::uniform_int_distribution<int> pick{0, 29};
  std::normal_distribution<float> noise{0, 1};
  for (int step = 0; step < 50; ++step) {
    strings keys;
    for (int k = 0; k < 12; ++k)
      keys.push_back("w" + std::to_string(pick(rng)));
    floats grads(keys.size() * 3);
    for (auto& g : grads)
      g = noise(rng);
    ASSERT_FALSE(update(master, keys, grads));
    // The reference applies one summed gradient per distinct key, as the master does.
    std::map<std::string, floats> summed;
    for (size_t k = 0; k < keys.size(); ++k) {
      auto& acc = summed[keys[k]];
      acc.resize(3);
      for (size_t d = 0; d < 3; ++d)
        acc[d] += grads[k * 3 + d];
    }
    std::vector<std::string_view> unique;
    floats unique_grads;
    for (auto& [key, g] : summed) {
      unique.push_back(key);
      unique_grads.insert(unique_grads.end(), g.begin(), g.end());
    }
    ASSERT_FALSE((*reference)->update(unique, unique_grads, 1));
  }
  strings probe{"w3", "w1", "w3", "never-seen", "w29"};
  auto got = lookup(master, probe);
  std::vector<std::string_view> views(probe.begin(), probe.end());
  floats expected(probe.size() * 3);
  ASSERT_FALSE((*reference)->lookup(views, expected));
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 1e-6) << "value " << i << " (input order kept)";
  auto stats = ask<embedding_stats>(sys, master, test::patience, stats_atom::value,
                                    std::string{"words"});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->rows, (*reference)->stats().rows);
}

TEST_F(embedding_master_test, ANonFiniteGradientAnywhereChangesNoShard) {
  auto master = start(4);
  strings keys;
  for (int i = 0; i < 16; ++i)
    keys.push_back("k" + std::to_string(i));
  auto before = lookup(master, keys);
  floats grads(keys.size() * 3, 0.5f);
  grads[40] = NAN;
  EXPECT_TRUE(is(update(master, keys, grads), errc::non_finite));
  EXPECT_TRUE(is(update(master, keys, floats(5)), errc::dimension_mismatch));
  EXPECT_TRUE(is(update(master, {}, {}), errc::empty_batch));
  auto unknown = ask<floats>(sys, master, test::patience, lookup_atom::value,
                             std::string{"nope"}, keys);
  EXPECT_TRUE(is(error_of(unknown), errc::unknown_embedding));
  EXPECT_EQ(lookup(master, keys), before);
}

TEST_F(embedding_master_test, RequestsBeyondTheInFlightBoundWaitTheirTurn) {
  auto master = start(2, 1, 1000);
  // 200 requests at once with one fan-out in flight: all are answered, each correctly.
  caf::scoped_actor client{sys};
  for (int i = 0; i < 200; ++i)
    client->send(master, lookup_atom::value, std::string{"words"},
                 strings{"key" + std::to_string(i % 7)});
  int answered = 0;
  for (int i = 0; i < 200; ++i)
    client->receive([&](floats& rows) { answered += rows.size() == 3u ? 1 : 0; },
                    [](caf::error& err) { ADD_FAILURE() << render(err); },
                    caf::after(test::patience) >> [] { ADD_FAILURE() << "no answer"; });
  EXPECT_EQ(answered, 200);
}

TEST_F(embedding_master_test, RequestsBeyondTheQueueAreRefusedAsOverloaded) {
  auto master = start(1, 1, 2);
  caf::scoped_actor client{sys};
  for (int i = 0; i < 50; ++i)
    client->send(master, lookup_atom::value, std::string{"words"}, strings{"x"});
  int ok = 0, overloaded = 0, other = 0;
  for (int i = 0; i < 50; ++i)
    client->receive([&](floats&) { ++ok; },
                    [&](caf::error& err) { (is(err, errc::overloaded) ? overloaded : other)++; },
                    caf::after(test::patience) >> [&] { ++other; });
  EXPECT_EQ(other, 0);
  EXPECT_GE(ok, 3) << "one in flight and two queued are always served";
  EXPECT_EQ(ok + overloaded, 50);
}

} // namespace
} // namespace darcy::actors

namespace darcy::actors {
namespace {

TEST_F(embedding_master_test, DistributedTopKEqualsBruteForceWithAndWithoutBias) {
  auto master = start(4);
  strings keys;
  for (int i = 0; i < 500; ++i)
    keys.push_back("item-" + std::to_string(i));
  auto rows = lookup(master, keys);
  ASSERT_EQ(rows.size(), keys.size() * 3);
  for (bool with_bias : {false, true}) {
    size_t qdim = with_bias ? 2 : 3;
    floats queries{0.3f, -1.0f, 0.7f, 1.0f, 0.2f, -0.4f};
    queries.resize(2 * qdim);
    auto result = ask<top_k_result>(sys, master, test::patience, top_k_atom::value,
                                    std::string{"words"}, queries, uint32_t{7}, with_bias);
    ASSERT_TRUE(result) << render(error_of(result));
    ASSERT_EQ(result->offsets, (std::vector<uint32_t>{0, 7, 14}));
    for (size_t q = 0; q < 2; ++q) {
      // Brute force over every row: [c;1]·[w;b] with bias, c·w without.
      std::vector<std::pair<float, std::string>> all;
      for (size_t r = 0; r < keys.size(); ++r) {
        float score = with_bias ? rows[r * 3 + 2] : 0.0f;
        for (size_t d = 0; d < qdim; ++d)
          score += queries[q * qdim + d] * rows[r * 3 + d];
        all.emplace_back(score, keys[r]);
      }
      std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first > b.first; });
      for (size_t i = 0; i < 7; ++i) {
        EXPECT_EQ(result->keys[q * 7 + i], all[i].second) << "query " << q << " rank " << i;
        EXPECT_NEAR(result->scores[q * 7 + i], all[i].first, 1e-5);
      }
    }
  }
  auto bad = ask<top_k_result>(sys, master, test::patience, top_k_atom::value,
                               std::string{"words"}, floats{1, 2}, uint32_t{3}, false);
  EXPECT_TRUE(is(error_of(bad), errc::dimension_mismatch));
  auto zero = ask<top_k_result>(sys, master, test::patience, top_k_atom::value,
                                std::string{"words"}, floats{1, 2, 3}, uint32_t{0}, false);
  EXPECT_TRUE(is(error_of(zero), errc::invalid_argument));
}

} // namespace
} // namespace darcy::actors

namespace darcy::actors {
namespace {

TEST_F(embedding_master_test, SandboxServesDefaultsWithoutGrowingAndRefusesUpdates) {
  embedding_master_options opts;
  opts.shards = spawn_shards(sys, 3);
  auto master = sys.spawn(embedding_master, opts);
  auto cfg = words_config();
  cfg.read_only = true;
  cfg.default_value = {9, 8, 7};
  ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, cfg));
  EXPECT_EQ(lookup(master, {"a", "b"}), (floats{9, 8, 7, 9, 8, 7}));
  EXPECT_TRUE(is(update(master, {"a"}, {1, 1, 1}), errc::read_only));
  auto stats = ask<embedding_stats>(sys, master, test::patience, stats_atom::value,
                                    std::string{"words"});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->rows, 0u);
}

// Messages to every shard pass a chaos gate; the master retries what times out, and the shards
// apply each update once however many copies reach them.
TEST_F(embedding_master_test, LostOrLateShardMessagesAreRetriedAndApplyOnce) {
  struct row {
    const char* name;
    disruption plan;
  } rows[] = {
    {"a fifth of the messages dropped", {0.2, 0, 0, 5}},
    {"every message late, after its attempt timed out", {0, 1.0, 30, 5}},
  };
  auto train = [&](const embedding_master_actor& m) {
    std::mt19937 rng{3};
    std::uniform_int_distribution<int> pick{0, 19};
    std::normal_distribution<float> noise{0, 1};
    for (int step = 0; step < 20; ++step) {
      strings keys;
      for (int k = 0; k < 8; ++k)
        keys.push_back("w" + std::to_string(pick(rng)));
      floats grads(keys.size() * 3);
      for (auto& g : grads)
        g = noise(rng);
      EXPECT_FALSE(update(m, keys, grads)) << step;
      lookup(m, keys);
    }
    strings all;
    for (int k = 0; k < 20; ++k)
      all.push_back("w" + std::to_string(k));
    return lookup(m, all);
  };
  auto clean = train(start(3));
  for (auto& r : rows) {
    embedding_master_options opts;
    for (auto& shard : spawn_shards(sys, 3))
      opts.shards.push_back(caf::actor_cast<embedding_shard_actor>(
        sys.spawn(runtime::chaos_gate, caf::actor_cast<caf::actor>(shard), r.plan)));
    opts.attempt_timeout = std::chrono::milliseconds(10);
    opts.attempts = 12;
    auto master = sys.spawn(embedding_master, opts);
    ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, words_config()))
      << r.name;
    EXPECT_EQ(train(master), clean) << r.name;
    auto stats = ask<embedding_stats>(sys, master, test::patience, stats_atom::value,
                                      std::string{"words"});
    ASSERT_TRUE(stats) << r.name;
    EXPECT_GT(stats->retried_requests, 0u) << r.name;
    EXPECT_EQ(stats->rows, 20u) << r.name;
  }
}

} // namespace
} // namespace darcy::actors
