#include "actors/embedding/direct_embedding.hpp"

#include <cmath>
#include <random>
#include <thread>

#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "compute/hash.hpp"
#include "runtime/ask.hpp"
#include "tests/support/embedding_requests.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;
using floats = std::vector<float>;

// Two services of 3 shards, one used through its master and one through the direct path.
class direct_embedding_test : public test::system_fixture {
protected:
  void SetUp() override {
    for (auto* service : {&by_master, &direct}) {
      auto shards = spawn_local_shards(sys, 3);
      service->tables = shards.tables;
      service->master = sys.spawn(embedding_master, embedding_master_options{shards.actors});
      auto wide = test::adagrad_table("wide", 4);
      wide.max_batch = 4096;
      for (auto& cfg : {test::adagrad_table("in", 4), test::adagrad_table("out", 2), wide})
        ASSERT_TRUE(ask<ok_atom>(sys, service->master, test::patience, create_atom::value, cfg));
    }
  }

  struct service {
    embedding_master_actor master;
    std::vector<shard_tables_ptr> tables;
  };
  service by_master, direct;
};

TEST_F(direct_embedding_test, LookupsAndUpdatesEqualTheMastersBitForBit) {
  direct_embedding path{direct.tables};
  std::mt19937 rng{5};
  for (int step = 1; step <= 30; ++step) {
    auto tables = test::two_table_request(rng);
    auto reply =
      ask<lookup_reply>(sys, by_master.master, test::patience, lookup_atom::value, tables, true);
    ASSERT_TRUE(reply) << render(error_of(reply));
    std::vector<floats> rows{floats(20 * 4), floats(20 * 2)};
    auto route = path.lookup(tables, {rows[0], rows[1]});
    ASSERT_TRUE(route) << render(route.error());
    for (size_t t = 0; t < 2; ++t) {
      auto expected = reply->rows[t].values();
      EXPECT_EQ(rows[t], floats(expected.begin(), expected.end())) << "step " << step;
    }
    auto grads = test::two_table_gradients(rng);
    std::vector<shared_floats> sent{shared_floats{grads[0]}, shared_floats{grads[1]}};
    ASSERT_TRUE(ask<ok_atom>(sys, by_master.master, test::patience, backward_atom::value,
                             reply->handle, sent, int64_t{step}));
    ASSERT_FALSE(path.update(**route, {grads[0], grads[1]}, step));
  }
}

TEST_F(direct_embedding_test, LargeRequestsSpreadOverThreadsStillEqualTheMastersBitForBit) {
  direct_embedding path{direct.tables};
  std::mt19937 rng{11};
  std::uniform_int_distribution<int> pick{0, 3000};
  std::normal_distribution<float> noise{0, 1};
  // 2,000 keys: past the size at which the shards run on threads of their own.
  constexpr size_t keys = 2000;
  for (int step = 1; step <= 5; ++step) {
    std::vector<table_keys> tables{{"wide", {}}};
    for (size_t k = 0; k < keys; ++k) {
      auto key = "w" + std::to_string(pick(rng));
      tables[0].keys.push_back(key, compute::hash_key(key));
    }
    auto reply =
      ask<lookup_reply>(sys, by_master.master, test::patience, lookup_atom::value, tables, true);
    ASSERT_TRUE(reply) << render(error_of(reply));
    floats rows(keys * 4);
    auto route = path.lookup(tables, {rows});
    ASSERT_TRUE(route) << render(route.error());
    auto expected = reply->rows[0].values();
    EXPECT_EQ(rows, floats(expected.begin(), expected.end())) << "step " << step;
    floats grads(keys * 4);
    for (auto& g : grads)
      g = noise(rng);
    std::vector<shared_floats> sent{shared_floats{grads}};
    ASSERT_TRUE(ask<ok_atom>(sys, by_master.master, test::patience, backward_atom::value,
                             reply->handle, sent, int64_t{step}));
    ASSERT_FALSE(path.update(**route, {grads}, step));
  }
}

TEST_F(direct_embedding_test, ConcurrentCallersOfLargeRequestsEqualTheMastersBitForBit) {
  // Two trainer threads on disjoint keys, each sending requests past parallel_keys; the master
  // then applies the same steps one caller after the other.
  direct_embedding path{direct.tables};
  constexpr size_t keys = 1500;
  auto request = [&](char prefix) {
    std::vector<table_keys> tables{{"wide", {}}};
    for (size_t k = 0; k < keys; ++k) {
      auto key = prefix + std::to_string(k);
      tables[0].keys.push_back(key, compute::hash_key(key));
    }
    return tables;
  };
  auto gradients = [](char prefix, int step) {
    floats grads(keys * 4);
    for (size_t i = 0; i < grads.size(); ++i)
      grads[i] = std::sin(static_cast<float>(i + step * 7 + prefix));
    return grads;
  };
  std::vector<floats> seen(2, floats(keys * 4));
  std::vector<caf::error> errors(2);
  auto caller = [&](size_t c) {
    auto prefix = static_cast<char>('a' + c);
    auto tables = request(prefix);
    for (int step = 1; step <= 4 && !errors[c]; ++step) {
      auto route = path.lookup(tables, {seen[c]});
      if (!route) {
        errors[c] = route.error();
        break;
      }
      auto grads = gradients(prefix, step);
      errors[c] = path.update(**route, {grads}, step);
    }
    if (!errors[c]) {
      auto route = path.lookup(tables, {seen[c]});
      errors[c] = route ? caf::error{} : route.error();
    }
  };
  std::thread other{caller, 1};
  caller(0);
  other.join();
  for (size_t c = 0; c < 2; ++c) {
    ASSERT_FALSE(errors[c]) << render(errors[c]);
    auto prefix = static_cast<char>('a' + c);
    auto tables = request(prefix);
    for (int step = 1; step <= 5; ++step) {
      auto reply =
        ask<lookup_reply>(sys, by_master.master, test::patience, lookup_atom::value, tables, true);
      ASSERT_TRUE(reply) << render(error_of(reply));
      if (step == 5) {
        auto expected = reply->rows[0].values();
        EXPECT_EQ(seen[c], floats(expected.begin(), expected.end())) << "caller " << c;
        break;
      }
      std::vector<shared_floats> sent{shared_floats{gradients(prefix, step)}};
      ASSERT_TRUE(ask<ok_atom>(sys, by_master.master, test::patience, backward_atom::value,
                               reply->handle, sent, int64_t{step}));
    }
  }
}

TEST_F(direct_embedding_test, RefusedRequestsChangeNothing) {
  direct_embedding path{direct.tables};
  std::mt19937 rng{9};
  auto tables = test::two_table_request(rng);
  std::vector<floats> before{floats(20 * 4), floats(20 * 2)};
  auto route = path.lookup(tables, {before[0], before[1]});
  ASSERT_TRUE(route) << render(route.error());
  floats nan_grads(20 * 4, 0.5f);
  nan_grads[7] = std::nanf("");
  floats short_grads(3);
  floats good_out(20 * 2, 0.5f);
  floats good_in(20 * 4, 0.5f);
  struct case_t {
    const char* what;
    std::vector<std::span<const float>> grads;
    errc expected;
  };
  for (auto& c : std::vector<case_t>{
         {"NaN in the first table", {nan_grads, good_out}, errc::non_finite},
         {"too few values", {good_in, short_grads}, errc::dimension_mismatch},
         {"one buffer for two tables", {nan_grads}, errc::dimension_mismatch},
       }) {
    auto err = path.update(**route, c.grads, 1);
    EXPECT_TRUE(is(err, c.expected)) << c.what << ": " << render(err);
  }
  std::vector<floats> after{floats(20 * 4), floats(20 * 2)};
  ASSERT_TRUE(path.lookup(tables, {after[0], after[1]}));
  EXPECT_EQ(before, after);

  floats out(4);
  std::vector<table_keys> unknown{{"missing", {}}};
  unknown[0].keys.push_back("a", compute::hash_key("a"));
  EXPECT_TRUE(is(path.lookup(unknown, {out}).error(), errc::unknown_embedding));
  std::vector<table_keys> too_many{{"in", {}}};
  for (int k = 0; k < 65; ++k)
    too_many[0].keys.push_back("x", compute::hash_key("x"));
  floats big(65 * 4);
  EXPECT_TRUE(is(path.lookup(too_many, {big}).error(), errc::batch_too_large));
  std::vector<table_keys> one{{"in", {}}};
  one[0].keys.push_back("a", compute::hash_key("a"));
  floats wrong(3);
  EXPECT_TRUE(is(path.lookup(one, {wrong}).error(), errc::dimension_mismatch));
  EXPECT_TRUE(is(path.lookup({}, {}).error(), errc::empty_batch));
}

} // namespace
} // namespace darcy::actors
