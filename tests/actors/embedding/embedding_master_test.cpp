#include "actors/embedding/embedding_master.hpp"

#include <cmath>
#include <random>

#include "actors/embedding/embedding_shard.hpp"
#include "actors/embedding/key_routing.hpp"
#include "compute/placement.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/chaos.hpp"
#include "stores/embedding/de_config.hpp"
#include "tests/support/temp_dir.hpp"
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
    auto rows = ask<floats>(sys, m, test::patience, lookup_atom::value, std::string{"words"}, keys);
    EXPECT_TRUE(rows) << render(error_of(rows));
    return rows ? *rows : floats{};
  }

  caf::error update(const embedding_master_actor& m, const strings& keys, const floats& grads) {
    return error_of(ask<ok_atom>(sys, m, test::patience, update_atom::value, std::string{"words"},
                                 keys, grads, int64_t{1}));
  }

  // Two supervised shards ("shard-0", "shard-1"), the second behind `gate`, a chaos gate that
  // lose_node() makes drop every message, as a dead node's connection would.
  embedding_master_options gated_shards(caf::actor& gate) {
    embedding_master_options opts;
    opts.shards = spawn_shards(sys, 2);
    gate =
      sys.spawn(runtime::chaos_gate, caf::actor_cast<caf::actor>(opts.shards[1]), disruption{});
    opts.shards[1] = caf::actor_cast<embedding_shard_actor>(gate);
    opts.shard_services = {"shard-0", "shard-1"};
    return opts;
  }

  void lose_node(const caf::actor& gate) {
    ASSERT_TRUE(ask<chaos_stats>(sys, gate, test::patience,
                                 chaos_command{chaos_op::disrupt, {1.0, 0, 0, 1}}));
  }

  static strings sixteen_keys() {
    strings keys;
    for (int i = 0; i < 16; ++i)
      keys.push_back("k" + std::to_string(i));
    return keys;
  }

  // Updates `words`, saves step 1 to `dir`, then updates them again when `update_after_save`;
  // the rows as saved.
  floats save_between_updates(const embedding_master_actor& m, const strings& words,
                              const std::string& dir, bool update_after_save) {
    EXPECT_FALSE(update(m, words, floats(words.size() * 3, 0.5f)));
    EXPECT_TRUE(ask<checkpoint_manifest>(sys, m, test::patience, save_atom::value, dir, int64_t{1},
                                         std::string{}));
    auto saved = lookup(m, words);
    if (update_after_save) {
      EXPECT_FALSE(update(m, words, floats(words.size() * 3, 1.0f)));
    }
    return saved;
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
  auto stats =
    ask<embedding_stats>(sys, master, test::patience, stats_atom::value, std::string{"words"});
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
  auto unknown =
    ask<floats>(sys, master, test::patience, lookup_atom::value, std::string{"nope"}, keys);
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

TEST_F(embedding_master_test, DistributedTopKEqualsBruteForceForEveryScore) {
  auto master = start(4);
  strings keys;
  for (int i = 0; i < 500; ++i)
    keys.push_back("item-" + std::to_string(i));
  auto rows = lookup(master, keys);
  ASSERT_EQ(rows.size(), keys.size() * 3);
  auto norm = [](const float* v, size_t n) {
    float sum = 0;
    for (size_t d = 0; d < n; ++d)
      sum += v[d] * v[d];
    return std::sqrt(sum);
  };
  struct case_t {
    top_k_score score;
    size_t qdim;
  };
  for (auto [score, qdim] :
       {case_t{top_k_score::inner_product, 3}, case_t{top_k_score::inner_product_bias, 2},
        case_t{top_k_score::cosine, 3}}) {
    SCOPED_TRACE(static_cast<int>(score));
    floats queries{0.3f, -1.0f, 0.7f, 1.0f, 0.2f, -0.4f};
    queries.resize(2 * qdim);
    auto result = ask<top_k_result>(sys, master, test::patience, top_k_atom::value,
                                    std::string{"words"}, queries, uint32_t{7}, score);
    ASSERT_TRUE(result) << render(error_of(result));
    ASSERT_EQ(result->offsets, (std::vector<uint32_t>{0, 7, 14}));
    for (size_t q = 0; q < 2; ++q) {
      // Brute force over every row: c·w, [c;1]·[w;b], or c·w / (|c| |w|).
      std::vector<std::pair<float, std::string>> all;
      for (size_t r = 0; r < keys.size(); ++r) {
        float score_value = score == top_k_score::inner_product_bias ? rows[r * 3 + 2] : 0.0f;
        for (size_t d = 0; d < qdim; ++d)
          score_value += queries[q * qdim + d] * rows[r * 3 + d];
        if (score == top_k_score::cosine)
          score_value /= norm(&queries[q * qdim], qdim) * norm(&rows[r * 3], 3);
        all.emplace_back(score_value, keys[r]);
      }
      std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first > b.first; });
      for (size_t i = 0; i < 7; ++i) {
        EXPECT_EQ(result->keys[q * 7 + i], all[i].second) << "query " << q << " rank " << i;
        EXPECT_NEAR(result->scores[q * 7 + i], all[i].first, 1e-5);
      }
    }
  }
  auto bad = ask<top_k_result>(sys, master, test::patience, top_k_atom::value, std::string{"words"},
                               floats{1, 2}, uint32_t{3}, top_k_score::inner_product);
  EXPECT_TRUE(is(error_of(bad), errc::dimension_mismatch));
  auto zero =
    ask<top_k_result>(sys, master, test::patience, top_k_atom::value, std::string{"words"},
                      floats{1, 2, 3}, uint32_t{0}, top_k_score::cosine);
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
  auto stats =
    ask<embedding_stats>(sys, master, test::patience, stats_atom::value, std::string{"words"});
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
    auto stats =
      ask<embedding_stats>(sys, master, test::patience, stats_atom::value, std::string{"words"});
    ASSERT_TRUE(stats) << r.name;
    EXPECT_GT(stats->retried_requests, 0u) << r.name;
    EXPECT_EQ(stats->rows, 20u) << r.name;
  }
}

de_config context_config() {
  auto cfg = words_config();
  cfg.name = "ctx";
  cfg.dim = 2;
  cfg.optimizer = {optimizer_kind::sgd, 0.5f};
  return cfg;
}

std::vector<table_keys> two_tables(const strings& words, const strings& contexts) {
  return {{"words", hash_keys(words)}, {"ctx", hash_keys(contexts)}};
}

floats copy_of(const shared_floats& x) {
  return {x.values().begin(), x.values().end()};
}

// A lookup of two tables in one request, then backward with only the handle and the
// gradients, leaves the same rows as the keyed update path, repeated keys included.
TEST_F(embedding_master_test, HandleBackwardOfTwoTablesEqualsKeyedUpdates) {
  strings words = {"a", "b", "a", "c", "d", "b"};
  strings contexts = {"x", "y", "x"};
  floats word_grads(words.size() * 3), ctx_grads(contexts.size() * 2);
  for (size_t i = 0; i < word_grads.size(); ++i)
    word_grads[i] = 0.1f * static_cast<float>(i) - 0.7f;
  for (size_t i = 0; i < ctx_grads.size(); ++i)
    ctx_grads[i] = 0.3f - 0.05f * static_cast<float>(i);
  auto keyed = start(3);
  ASSERT_TRUE(ask<ok_atom>(sys, keyed, test::patience, create_atom::value, context_config()));
  auto handled = start(3);
  ASSERT_TRUE(ask<ok_atom>(sys, handled, test::patience, create_atom::value, context_config()));

  auto reply = ask<lookup_reply>(sys, handled, test::patience, lookup_atom::value,
                                 two_tables(words, contexts), true);
  ASSERT_TRUE(reply) << render(reply.error());
  ASSERT_NE(reply->handle, 0u);
  ASSERT_EQ(reply->rows.size(), 2u);
  EXPECT_EQ(copy_of(reply->rows[0]), lookup(keyed, words));
  EXPECT_EQ(copy_of(reply->rows[1]), *ask<floats>(sys, keyed, test::patience, lookup_atom::value,
                                                  std::string{"ctx"}, contexts));
  ASSERT_TRUE(ask<ok_atom>(
    sys, handled, test::patience, backward_atom::value, reply->handle,
    std::vector<shared_floats>{shared_floats{word_grads}, shared_floats{ctx_grads}}, int64_t{1}));
  ASSERT_FALSE(update(keyed, words, word_grads));
  ASSERT_TRUE(ask<ok_atom>(sys, keyed, test::patience, update_atom::value, std::string{"ctx"},
                           contexts, ctx_grads, int64_t{1}));
  auto after = ask<lookup_reply>(sys, handled, test::patience, lookup_atom::value,
                                 two_tables(words, contexts), false);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->handle, 0u);
  EXPECT_EQ(copy_of(after->rows[0]), lookup(keyed, words));
  EXPECT_EQ(copy_of(after->rows[1]), *ask<floats>(sys, keyed, test::patience, lookup_atom::value,
                                                  std::string{"ctx"}, contexts));
}

// A handle is used once: a second backward, one with a bad shape, and an unknown handle are
// each a clear error, and none changes a row.
TEST_F(embedding_master_test, HandleBackwardAppliesOnceAndRefusesBadOrUnknownHandles) {
  auto master = start(2);
  strings words = {"p", "q"};
  auto reply = ask<lookup_reply>(sys, master, test::patience, lookup_atom::value,
                                 std::vector<table_keys>{{"words", hash_keys(words)}}, true);
  ASSERT_TRUE(reply);
  auto backward = [&](uint64_t handle, floats grads) {
    return error_of(ask<ok_atom>(sys, master, test::patience, backward_atom::value, handle,
                                 std::vector<shared_floats>{shared_floats{std::move(grads)}},
                                 int64_t{1}));
  };
  EXPECT_TRUE(is(backward(reply->handle, floats(5, 1.0f)), errc::dimension_mismatch));
  EXPECT_TRUE(is(backward(reply->handle, {1, 1, 1, 1, 1, NAN}), errc::non_finite));
  EXPECT_EQ(lookup(master, words), copy_of(reply->rows[0]));
  ASSERT_FALSE(backward(reply->handle, floats(6, 1.0f)));
  auto once = lookup(master, words);
  EXPECT_NE(once, copy_of(reply->rows[0]));
  auto again = backward(reply->handle, floats(6, 1.0f));
  EXPECT_TRUE(is(again, errc::not_found)) << render(again);
  EXPECT_TRUE(is(backward(reply->handle + 12345, floats(6, 1.0f)), errc::not_found));
  EXPECT_EQ(lookup(master, words), once);
}

// A shard restarted between a lookup and its backward has lost the handle: backward fails
// clearly, the other shards apply their part once, and a repeat applies nothing twice.
TEST_F(embedding_master_test, ShardRestartedBetweenLookupAndBackwardIsAClearErrorNothingTwice) {
  embedding_master_options opts;
  opts.shards = spawn_shards(sys, 2);
  opts.shard_services = {"shard-0", "shard-1"};
  auto master = sys.spawn(embedding_master, opts);
  ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, words_config()));
  auto words = sixteen_keys();
  auto before = lookup(master, words);
  auto reply = ask<lookup_reply>(sys, master, test::patience, lookup_atom::value,
                                 std::vector<table_keys>{{"words", hash_keys(words)}}, true);
  ASSERT_TRUE(reply);
  // Shard 1 comes back as a new actor (its node restarted): the master re-creates its tables.
  auto fresh = sys.spawn(embedding_shard, uint32_t{1});
  caf::anon_send(master, cluster_event{cluster_event_kind::service_up, "n", "shard-1",
                                       caf::actor_cast<caf::actor>(fresh), "", 0});
  floats grads(words.size() * 3, 1.0f);
  auto backward = [&] {
    return error_of(ask<ok_atom>(sys, master, test::patience, backward_atom::value, reply->handle,
                                 std::vector<shared_floats>{shared_floats{grads}}, int64_t{1}));
  };
  auto err = backward();
  EXPECT_TRUE(is(err, errc::not_found)) << render(err);
  EXPECT_NE(render(err).find("restarted"), std::string::npos) << render(err);
  auto once = lookup(master, words);
  EXPECT_TRUE(is(backward(), errc::not_found));
  EXPECT_EQ(lookup(master, words), once);
  // Shard 0's rows moved once; shard 1's are fresh rows, never updated.
  size_t moved = 0, fresh_rows = 0;
  for (size_t k = 0; k < words.size(); ++k) {
    auto s = compute::shard_of_key(words[k], 2);
    floats b(before.begin() + k * 3, before.begin() + k * 3 + 3);
    floats o(once.begin() + k * 3, once.begin() + k * 3 + 3);
    if (s == 0) {
      EXPECT_NE(o, b) << words[k];
      ++moved;
    } else {
      EXPECT_EQ(o, b) << words[k];
      ++fresh_rows;
    }
  }
  EXPECT_GT(moved, 0u);
  EXPECT_GT(fresh_rows, 0u);
}

// A shard refilled from the checkpoint after the other shards took later updates leaves a model
// that is half older: the master refuses lookups, updates, saves and top-k, naming the shard and
// asking for a restore, until a restore succeeds. Refilled with nothing newer lost, it serves on.
TEST_F(embedding_master_test, ShardRefilledBehindTheOthersRefusesWorkUntilARestore) {
  struct refill_case {
    const char* name;
    bool update_after_save;
  };
  for (auto& c : std::vector<refill_case>{{"update after the save", true},
                                          {"no update after the save", false}}) {
    test::temp_dir dir{"master_refill"};
    embedding_master_options opts;
    opts.shards = spawn_shards(sys, 2);
    opts.shard_services = {"shard-0", "shard-1"};
    opts.checkpoint_dir = dir.path();
    auto master = sys.spawn(embedding_master, opts);
    ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, words_config()));
    auto words = sixteen_keys();
    auto saved = save_between_updates(master, words, dir.path(), c.update_after_save);
    auto fresh = sys.spawn(embedding_shard, uint32_t{1});
    caf::anon_send(master, cluster_event{cluster_event_kind::service_up, "n", "shard-1",
                                         caf::actor_cast<caf::actor>(fresh), "", 0});
    auto looked =
      ask<floats>(sys, master, test::patience, lookup_atom::value, std::string{"words"}, words);
    if (!c.update_after_save) {
      ASSERT_TRUE(looked) << c.name << ": " << render(error_of(looked));
      EXPECT_EQ(*looked, saved) << c.name;
      continue;
    }
    auto err = error_of(looked);
    EXPECT_TRUE(is(err, errc::node_unreachable)) << render(err);
    EXPECT_NE(render(err).find("shard 1"), std::string::npos) << render(err);
    EXPECT_NE(render(err).find("restore"), std::string::npos) << render(err);
    EXPECT_TRUE(is(update(master, words, floats(words.size() * 3, 1.0f)), errc::node_unreachable));
    EXPECT_TRUE(is(error_of(ask<checkpoint_manifest>(sys, master, test::patience, save_atom::value,
                                                     dir.path(), int64_t{2}, std::string{})),
                   errc::node_unreachable));
    EXPECT_TRUE(is(error_of(ask<top_k_result>(sys, master, test::patience, top_k_atom::value,
                                              std::string{"words"}, floats{1, 0, 0}, 1u,
                                              top_k_score::inner_product)),
                   errc::node_unreachable));
    auto stats =
      ask<embedding_stats>(sys, master, test::patience, stats_atom::value, std::string{"words"});
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->recovered_shards, 1u);
    ASSERT_TRUE(
      ask<checkpoint_manifest>(sys, master, test::patience, restore_atom::value, dir.path()));
    EXPECT_EQ(lookup(master, words), saved) << "every shard back at the checkpoint";
    EXPECT_FALSE(update(master, words, floats(words.size() * 3, 1.0f)));
  }
}

// Saves and restores asked while a supervised shard is down wait until it is back and refilled,
// then run in order: none reaches the lost shard (whose messages vanish, as on a dead node) and
// none is left unanswered. After later updates the refill leaves the shards diverged, so the
// save is refused and the restore repairs them; with nothing newer lost, both succeed.
TEST_F(embedding_master_test, SavesAndRestoresAskedWhileAShardIsDownRunAfterItsRefillInOrder) {
  struct down_case {
    const char* name;
    bool update_after_save;
  };
  for (auto& c : std::vector<down_case>{{"update after the save", true},
                                        {"no update after the save", false}}) {
    test::temp_dir dir{"master_down"};
    caf::actor gate;
    auto opts = gated_shards(gate);
    opts.checkpoint_dir = dir.path();
    // One attempt: a request that reached the lost shard would fail, not be retried elsewhere.
    opts.attempts = 1;
    opts.attempt_timeout = std::chrono::milliseconds(50);
    auto master = sys.spawn(embedding_master, opts);
    ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, words_config()));
    auto words = sixteen_keys();
    auto saved = save_between_updates(master, words, dir.path(), c.update_after_save);
    lose_node(gate);
    caf::scoped_actor self{sys};
    self->send(master, cluster_event{cluster_event_kind::service_down, "n", "shard-1",
                                     caf::actor_cast<caf::actor>(gate), "node n down", 0});
    auto saving = self->request(master, test::patience, save_atom::value, dir.path(), int64_t{2},
                                std::string{});
    auto restoring = self->request(master, test::patience, restore_atom::value, dir.path());
    auto fresh = sys.spawn(embedding_shard, uint32_t{1});
    self->send(master, cluster_event{cluster_event_kind::service_up, "n", "shard-1",
                                     caf::actor_cast<caf::actor>(fresh), "", 0});
    caf::error save_err;
    saving.receive([](const checkpoint_manifest&) {}, [&](caf::error& err) { save_err = err; });
    caf::error restore_err;
    restoring.receive([](const checkpoint_manifest&) {},
                      [&](caf::error& err) { restore_err = err; });
    if (c.update_after_save) {
      EXPECT_TRUE(is(save_err, errc::node_unreachable)) << c.name << ": " << render(save_err);
      EXPECT_NE(render(save_err).find("restore"), std::string::npos) << render(save_err);
    } else {
      EXPECT_FALSE(save_err) << c.name << ": " << render(save_err);
    }
    EXPECT_FALSE(restore_err) << c.name << ": " << render(restore_err);
    EXPECT_EQ(lookup(master, words), saved) << c.name;
    EXPECT_FALSE(update(master, words, floats(words.size() * 3, 1.0f))) << c.name;
  }
}

// A shard replaced before its down event (which may come late or never) while requests wait
// on it: they fail as unreachable at once instead of retrying on its successor before the
// refill (which would answer that the embedding is unknown), and a late down event of the
// replaced shard does not take its successor down.
TEST_F(embedding_master_test, RequestsWaitingOnAReplacedShardFailAsUnreachableNotUnknown) {
  caf::actor gate;
  auto opts = gated_shards(gate);
  opts.attempts = 50;
  opts.attempt_timeout = std::chrono::milliseconds(20);
  auto master = sys.spawn(embedding_master, opts);
  ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, words_config()));
  auto words = sixteen_keys();
  auto before = lookup(master, words);
  lose_node(gate);
  caf::scoped_actor self{sys};
  auto looking =
    self->request(master, test::patience, lookup_atom::value, std::string{"words"}, words);
  auto ranking = self->request(master, test::patience, top_k_atom::value, std::string{"words"},
                               floats{1, 0, 0}, 1u, top_k_score::inner_product);
  auto fresh = sys.spawn(embedding_shard, uint32_t{1});
  self->send(master, cluster_event{cluster_event_kind::service_up, "n", "shard-1",
                                   caf::actor_cast<caf::actor>(fresh), "", 0});
  caf::error lookup_err, top_k_err;
  looking.receive([](const floats&) {}, [&](caf::error& e) { lookup_err = e; });
  ranking.receive([](const top_k_result&) {}, [&](caf::error& e) { top_k_err = e; });
  for (auto& err : {lookup_err, top_k_err}) {
    EXPECT_TRUE(is(err, errc::node_unreachable)) << render(err);
    EXPECT_NE(render(err).find("shard-1 was replaced"), std::string::npos) << render(err);
  }
  self->send(master, cluster_event{cluster_event_kind::service_down, "n", "shard-1",
                                   caf::actor_cast<caf::actor>(gate), "node n down", 0});
  // Refilled without a checkpoint: shard 1's rows start again from their initial values,
  // which are a function of the key.
  EXPECT_EQ(lookup(master, words), before);
  auto stats =
    ask<embedding_stats>(sys, master, test::patience, stats_atom::value, std::string{"words"});
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->recovered_shards, 1u);
}

// Without timers (shards in process, no gate), a request to a shard that has died is still
// answered: CAF bounces it as request_receiver_down, and the master fails the lookup.
TEST_F(embedding_master_test, ShardsWithoutTimersStillAnswerWhenAShardDied) {
  embedding_master_options opts;
  opts.shards = spawn_shards(sys, 2);
  opts.shards_may_lose_messages = false;
  auto master = sys.spawn(embedding_master, opts);
  ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, words_config()));
  auto words = sixteen_keys();
  EXPECT_EQ(lookup(master, words).size(), words.size() * 3);
  {
    caf::scoped_actor self{sys};
    self->monitor(opts.shards[1]);
    self->send_exit(opts.shards[1], caf::exit_reason::kill);
    self->receive([](const caf::down_msg&) {});
  }
  auto rows =
    ask<floats>(sys, master, test::patience, lookup_atom::value, std::string{"words"}, words);
  ASSERT_FALSE(rows);
  // CAF's answer for a receiver that is gone, or the master's own when the shard's down reached
  // it while the request waited: either way at once.
  EXPECT_TRUE(rows.error() == caf::sec::request_receiver_down ||
              is(rows.error(), errc::node_unreachable))
    << render(rows.error());
}

TEST_F(embedding_master_test, ARequestWaitingOnAnUnsupervisedShardFailsWhenItGoesDown) {
  embedding_master_options opts;
  opts.shards = spawn_shards(sys, 2);
  auto gate =
    sys.spawn(runtime::chaos_gate, caf::actor_cast<caf::actor>(opts.shards[1]), disruption{});
  opts.shards[1] = caf::actor_cast<embedding_shard_actor>(gate);
  // Lost messages are asked again only after the test's whole patience: the answer below can
  // only come from the shard's down.
  opts.attempt_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(test::patience);
  opts.attempts = 1;
  auto master = sys.spawn(embedding_master, opts);
  ASSERT_TRUE(ask<ok_atom>(sys, master, test::patience, create_atom::value, words_config()));
  lose_node(gate);
  caf::scoped_actor self{sys};
  auto waiting = self->request(master, test::patience * 2, lookup_atom::value, std::string{"words"},
                               sixteen_keys());
  // The gate has swallowed the lookup's part (a down before it would answer that instead).
  uint64_t dropped = 0;
  for (int polls = 0; dropped == 0 && polls < 100000; ++polls) {
    auto stats = ask<chaos_stats>(sys, gate, test::patience, chaos_command{chaos_op::stats, {}});
    ASSERT_TRUE(stats);
    dropped = stats->dropped;
  }
  ASSERT_GT(dropped, 0u);
  self->send_exit(gate, caf::exit_reason::kill); // its node is gone
  caf::error err;
  waiting.receive([](const floats&) { ADD_FAILURE() << "a lookup answered without shard 1"; },
                  [&](caf::error& e) { err = std::move(e); });
  EXPECT_TRUE(is(err, errc::node_unreachable)) << render(err);
}

} // namespace
} // namespace darcy::actors
