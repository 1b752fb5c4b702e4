#include "actors/embedding/shard_client.hpp"

#include <atomic>
#include <cmath>
#include <random>

#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "compute/hash.hpp"
#include "runtime/ask.hpp"
#include "tests/support/embedding_requests.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;
using floats = std::vector<float>;
using std::chrono::milliseconds;

// Two services of 3 shards, one used through its master and one through a shard_client.
class shard_client_test : public test::system_fixture {
protected:
  void SetUp() override {
    for (auto* master : {&by_master, &direct}) {
      auto shards = spawn_local_shards(sys, 3);
      *master = sys.spawn(embedding_master, embedding_master_options{shards.actors});
      for (auto& cfg : {test::adagrad_table("in", 4), test::adagrad_table("out", 2)})
        ASSERT_TRUE(ask<ok_atom>(sys, *master, test::patience, create_atom::value, cfg));
    }
    auto route = ask<shard_route>(sys, direct, test::patience, route_atom::value);
    ASSERT_TRUE(route) << render(route.error());
    ASSERT_EQ(route->shards.size(), 3u);
    ASSERT_EQ(route->configs.size(), 2u);
    client.emplace(sys, std::move(*route), milliseconds{20000}, milliseconds{2000});
  }

  /// The seeded two-table request, looked up through the client with its keys kept.
  struct kept_batch {
    std::vector<table_keys> tables;
    std::vector<floats> rows{floats(20 * 4), floats(20 * 2)};
    shard_lookup kept;
  };
  kept_batch look_up(unsigned seed) {
    std::mt19937 rng{seed};
    kept_batch b{test::two_table_request(rng)};
    auto kept = client->lookup(b.tables, {b.rows[0], b.rows[1]}, true);
    EXPECT_TRUE(kept) << render(error_of(kept));
    if (kept)
      b.kept = std::move(*kept);
    return b;
  }

  embedding_master_actor by_master, direct;
  std::optional<shard_client> client;
  /// Gradients for a two-table request, one value each.
  floats in = floats(20 * 4, 0.5f), out = floats(20 * 2, -0.25f);
};

std::vector<floats> lookup_through(embedding_master_actor master, caf::actor_system& sys,
                                   const std::vector<table_keys>& tables) {
  auto reply = ask<lookup_reply>(sys, master, test::patience, lookup_atom::value, tables, false);
  EXPECT_TRUE(reply) << render(error_of(reply));
  std::vector<floats> out;
  if (reply)
    for (auto& rows : reply->rows)
      out.emplace_back(rows.values().begin(), rows.values().end());
  return out;
}

TEST_F(shard_client_test, lookups_and_backward_passes_equal_the_masters_bit_for_bit) {
  std::mt19937 rng{5};
  for (int step = 1; step <= 30; ++step) {
    auto tables = test::two_table_request(rng);
    auto reply =
      ask<lookup_reply>(sys, by_master, test::patience, lookup_atom::value, tables, true);
    ASSERT_TRUE(reply) << render(error_of(reply));
    std::vector<floats> rows{floats(20 * 4), floats(20 * 2)};
    auto kept = client->lookup(tables, {rows[0], rows[1]}, true);
    ASSERT_TRUE(kept) << render(kept.error());
    ASSERT_NE(kept->handle, 0u);
    for (size_t t = 0; t < 2; ++t) {
      auto expected = reply->rows[t].values();
      EXPECT_EQ(rows[t], floats(expected.begin(), expected.end())) << "step " << step;
    }
    auto grads = test::two_table_gradients(rng);
    std::vector<shared_floats> sent{shared_floats{grads[0]}, shared_floats{grads[1]}};
    ASSERT_TRUE(ask<ok_atom>(sys, by_master, test::patience, backward_atom::value, reply->handle,
                             sent, int64_t{step}));
    ASSERT_FALSE(client->backward(*kept->route, kept->handle, {grads[0], grads[1]}, step));
  }
  ASSERT_FALSE(client->flush());
  std::mt19937 again{5};
  auto tables = test::two_table_request(again);
  EXPECT_EQ(lookup_through(by_master, sys, tables), lookup_through(direct, sys, tables));
}

TEST_F(shard_client_test, a_backward_sent_again_is_applied_once) {
  auto [tables, rows, kept] = look_up(3);
  ASSERT_NE(kept.route, nullptr);
  ASSERT_FALSE(client->backward(*kept.route, kept.handle, {in, out}, 1));
  ASSERT_FALSE(client->flush());
  auto once = lookup_through(direct, sys, tables);
  EXPECT_NE(once[0], rows[0]) << "the first backward changed the rows";
  EXPECT_FALSE(client->backward(*kept.route, kept.handle, {in, out}, 1));
  EXPECT_FALSE(client->flush()) << "a repeat (a resent request) is answered ok";
  EXPECT_EQ(lookup_through(direct, sys, tables), once) << "and changes nothing";
}

TEST_F(shard_client_test, a_lookup_after_a_backward_reads_its_rows_without_a_flush) {
  auto [tables, before, kept] = look_up(4);
  ASSERT_NE(kept.route, nullptr);
  auto after = before;
  ASSERT_FALSE(client->backward(*kept.route, kept.handle, {in, out}, 1));
  ASSERT_TRUE(client->lookup(tables, {after[0], after[1]}, false));
  ASSERT_FALSE(client->flush());
  EXPECT_EQ(lookup_through(direct, sys, tables), after)
    << "each shard answered the lookup after applying the backward sent before it";
  EXPECT_NE(after, before);
}

TEST_F(shard_client_test, a_prefetch_brings_rows_from_disk_and_changes_no_answer) {
  test::temp_dir dir{"shard_client_prefetch"};
  auto cfg = test::adagrad_table("disk", 4);
  cfg.backend = backend_kind::leveldb;
  cfg.path = dir.path();
  cfg.cache_bytes = 1; // the smallest memory tier: 16 rows a shard
  ASSERT_TRUE(ask<ok_atom>(sys, direct, test::patience, create_atom::value, cfg));
  auto route = ask<shard_route>(sys, direct, test::patience, route_atom::value);
  ASSERT_TRUE(route) << render(route.error());
  shard_client disk{sys, std::move(*route), milliseconds{20000}, milliseconds{2000}};
  // Batch b's 48 keys: the first batches' rows leave the tiers as the later ones come in.
  auto batch = [](int b) {
    std::vector<std::string> keys;
    for (int k = 0; k < 48; ++k)
      keys.push_back("row" + std::to_string(b * 48 + k));
    return std::vector<table_keys>{{"disk", hash_keys(keys)}};
  };
  std::vector<floats> first;
  for (int b = 0; b < 6; ++b) {
    floats rows(48 * 4);
    ASSERT_TRUE(disk.lookup(batch(b), {rows}, false));
    if (b == 0)
      first.push_back(rows);
  }
  auto stats = [&] {
    auto st = ask<embedding_stats>(sys, direct, test::patience, stats_atom::value, "disk");
    EXPECT_TRUE(st) << render(error_of(st));
    return st ? *st : embedding_stats{};
  };
  auto before = stats();
  EXPECT_EQ(before.prefetched_rows, 0u);
  // A table the route does not name is passed over.
  disk.prefetch({{"nowhere", hash_keys({"row0"})}, batch(0).front()});
  // Each shard took the prefetch before the stats request sent after it.
  auto after = stats();
  EXPECT_GT(after.prefetched_rows, 0u) << "rows of the first batch came back from disk";
  EXPECT_EQ(after.rows, before.rows) << "no row was created";
  floats again(48 * 4);
  ASSERT_TRUE(disk.lookup(batch(0), {again}, false));
  EXPECT_EQ(again, first.front());
  EXPECT_GE(stats().tier_hits - after.tier_hits, after.prefetched_rows)
    << "each prefetched row was a hit of the lookup";
}

TEST_F(shard_client_test, a_failed_backward_is_reported_by_the_next_call_that_waits) {
  auto [tables, rows, kept] = look_up(6);
  ASSERT_NE(kept.route, nullptr);
  auto unknown = kept.handle + 1000;
  for (auto* next : {"flush", "backward"}) {
    ASSERT_FALSE(client->backward(*kept.route, unknown, {in, out}, 1))
      << "sent: the shards have not answered yet";
    auto err = std::string{next} == "flush"
                 ? client->flush()
                 : client->backward(*kept.route, kept.handle, {in, out}, 1);
    EXPECT_TRUE(is(err, errc::not_found)) << next << ": " << render(err);
  }
  EXPECT_EQ(lookup_through(direct, sys, tables), rows)
    << "nothing was applied: the handle was unknown, and the backward after it refused";
  ASSERT_FALSE(client->backward(*kept.route, kept.handle, {in, out}, 1));
  EXPECT_FALSE(client->flush()) << "the failure was reported once";
}

TEST_F(shard_client_test, refused_requests_reach_no_shard_and_change_nothing) {
  auto [tables, before, kept] = look_up(9);
  ASSERT_NE(kept.route, nullptr);
  floats nan_grads(20 * 4, 0.5f);
  nan_grads[7] = std::nanf("");
  floats short_grads(3), good_out(20 * 2, 0.5f), good_in(20 * 4, 0.5f);
  struct case_t {
    const char* what;
    std::vector<std::span<const float>> grads;
    uint64_t handle;
    errc expected;
  };
  for (auto& c : std::vector<case_t>{
         {"NaN in the first table", {nan_grads, good_out}, kept.handle, errc::non_finite},
         {"too few values", {good_in, short_grads}, kept.handle, errc::dimension_mismatch},
         {"one buffer for two tables", {good_in}, kept.handle, errc::dimension_mismatch},
         {"a lookup that kept nothing", {good_in, good_out}, 0, errc::invalid_argument},
       }) {
    auto err = client->backward(*kept.route, c.handle, c.grads, 1);
    EXPECT_TRUE(is(err, c.expected)) << c.what << ": " << render(err);
  }
  EXPECT_EQ(lookup_through(direct, sys, tables), before);

  floats out(4);
  std::vector<table_keys> unknown{{"missing", {}}};
  unknown[0].keys.push_back("a", compute::hash_key("a"));
  EXPECT_TRUE(is(client->lookup(unknown, {out}, false).error(), errc::unknown_embedding));
  std::vector<table_keys> too_many{{"in", {}}};
  for (int k = 0; k < 65; ++k)
    too_many[0].keys.push_back("x", compute::hash_key("x"));
  floats big(65 * 4);
  EXPECT_TRUE(is(client->lookup(too_many, {big}, false).error(), errc::batch_too_large));
  std::vector<table_keys> one{{"in", {}}};
  one[0].keys.push_back("a", compute::hash_key("a"));
  floats wrong(3);
  EXPECT_TRUE(is(client->lookup(one, {wrong}, false).error(), errc::dimension_mismatch));
  EXPECT_TRUE(is(client->lookup(one, {}, false).error(), errc::dimension_mismatch));
  EXPECT_TRUE(is(client->lookup({}, {}, false).error(), errc::empty_batch));
  EXPECT_TRUE(client->knows("in"));
  EXPECT_FALSE(client->knows("missing"));
}

// A shard that answers nothing: it keeps every request's promise and counts the requests.
caf::behavior silent_shard(caf::event_based_actor* self, std::shared_ptr<std::atomic<int>> seen) {
  auto kept = std::make_shared<std::vector<caf::response_promise>>();
  return {
    [=](lookup_atom, const std::vector<table_keys>&, uint64_t) {
      ++*seen;
      kept->push_back(self->make_response_promise());
      return kept->back();
    },
  };
}

TEST_F(shard_client_test, a_silent_shard_gets_the_request_again_until_the_timeout) {
  auto seen = std::make_shared<std::atomic<int>>(0);
  auto silent = sys.spawn(silent_shard, seen);
  test::stop_on_exit stop{sys, silent};
  shard_route route{{caf::actor_cast<embedding_shard_actor>(silent)},
                    {test::adagrad_table("in", 4)}};
  shard_client impatient{sys, std::move(route), milliseconds{400}, milliseconds{50}};
  std::vector<table_keys> one{{"in", {}}};
  one[0].keys.push_back("a", compute::hash_key("a"));
  floats out(4);
  auto kept = impatient.lookup(one, {out}, true);
  ASSERT_FALSE(kept);
  EXPECT_EQ(kept.error(), caf::sec::request_timeout) << render(kept.error());
  EXPECT_GE(seen->load(), 2) << "the request was sent again before the timeout";
}

TEST_F(shard_client_test, a_master_of_supervised_shards_refuses_the_route) {
  auto shards = spawn_local_shards(sys, 2);
  embedding_master_options opts{shards.actors};
  opts.shard_services = {"s.0", "s.1"};
  auto master = sys.spawn(embedding_master, opts);
  auto route = ask<shard_route>(sys, master, test::patience, route_atom::value);
  ASSERT_FALSE(route);
  EXPECT_TRUE(is(route.error(), errc::unsupported)) << render(route.error());
}

} // namespace
} // namespace darcy::actors
