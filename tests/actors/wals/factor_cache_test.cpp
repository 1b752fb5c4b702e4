#include "actors/wals/factor_cache.hpp"

#include "actors/wals/factor_shard.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

factor_snapshot snapshot(uint64_t version, float value) {
  return {version, shared_floats{std::vector<float>(4, value)}};
}

TEST(factor_cache, HoldsNothingUntilPutThenKeepsTheNewestVersionPerShardAndSide) {
  factor_cache cache{2};
  EXPECT_EQ(cache.get(1, wals_side::cols).version, 0u);
  EXPECT_EQ(cache.get(1, wals_side::cols).rows.size(), 0u);
  struct step {
    const char* what;
    size_t shard;
    wals_side side;
    uint64_t version;
    float value;
    uint64_t held_version;
    float held_value;
  } steps[] = {
    {"first version", 1, wals_side::cols, 3, 1.0f, 3, 1.0f},
    {"newer version replaces", 1, wals_side::cols, 5, 2.0f, 5, 2.0f},
    {"older version (a slower worker's answer) is ignored", 1, wals_side::cols, 4, 9.0f, 5, 2.0f},
    {"another side is its own entry", 1, wals_side::rows, 1, 7.0f, 1, 7.0f},
    {"another shard is its own entry", 0, wals_side::cols, 2, 8.0f, 2, 8.0f},
  };
  for (auto& s : steps) {
    cache.put(s.shard, s.side, snapshot(s.version, s.value));
    auto held = cache.get(s.shard, s.side);
    EXPECT_EQ(held.version, s.held_version) << s.what;
    ASSERT_EQ(held.rows.size(), 4u) << s.what;
    EXPECT_EQ(held.rows.values()[0], s.held_value) << s.what;
  }
  EXPECT_EQ(cache.get(1, wals_side::cols).version, 5u) << "later puts left the first entry";
}

class factor_cache_of_test : public test::system_fixture {
protected:
  factor_shard_actor shard() {
    wals_params p;
    p.dim = 2;
    auto s = sys.spawn(factor_shard, wals_shard_config{0, 1, 3, 3, p});
    spawned.push_back(s);
    return s;
  }
  ~factor_cache_of_test() override {
    for (auto& s : spawned)
      caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  }
  std::vector<factor_shard_actor> spawned;
};

TEST_F(factor_cache_of_test, WorkersOfOneRunShareACacheAndAnotherRunGetsItsOwn) {
  std::vector<factor_shard_actor> run_a{shard()}, run_b{shard()};
  auto first = factor_cache::of(run_a);
  auto second = factor_cache::of(run_a);
  EXPECT_EQ(first, second) << "two workers of run a on this node";
  EXPECT_NE(factor_cache::of(run_b), first);
  first->put(0, wals_side::rows, snapshot(2, 1.0f));
  EXPECT_EQ(second->get(0, wals_side::rows).version, 2u);
  first.reset();
  second.reset();
  EXPECT_EQ(factor_cache::of(run_a)->get(0, wals_side::rows).version, 0u)
    << "a cache nobody holds is gone, rows and all";
}

} // namespace
} // namespace darcy::actors
