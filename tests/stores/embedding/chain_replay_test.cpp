// Tests stores/embedding/chain_replay (and stores/checkpoint/checkpoint_chain's read_chain under
// it): reading a chain by its base links, refusing broken ones, and replaying whole and delta
// parts onto another shard count.
#include "stores/embedding/chain_replay.hpp"

#include <map>

#include <gtest/gtest.h>

#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "stores/embedding/embedding_part.hpp"
#include "stores/embedding/memory_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

class chain_replay_test : public ::testing::Test {
protected:
  de_config config() {
    de_config cfg;
    cfg.name = "t";
    cfg.dim = 1;
    cfg.optimizer = {optimizer_kind::sgd, 1.0f};
    return cfg;
  }

  // A store of shard `index` of `count` holding `rows` (key -> value) that fall on it.
  std::unique_ptr<memory_store> shard(const std::map<std::string, float>& rows, uint32_t index,
                                      uint32_t count) {
    memory_store_options opts;
    opts.dim = 1;
    auto store = memory_store::make(opts);
    EXPECT_TRUE(store);
    for (auto& [key, value] : rows)
      if (compute::shard_of_key(key, count) == index) {
        float v[] = {value};
        EXPECT_FALSE((*store)->import_row({key, v, {}, 1, 0, 0}));
      }
    return std::move(*store);
  }

  // Commits a checkpoint on `base` of 2 shards: each shard's whole rows, or (delta) the rows of
  // `keys` it holds and the others of them as deleted.
  checkpoint_manifest commit(const std::string& id, const std::string& base,
                             const std::map<std::string, float>& rows,
                             const std::vector<std::string>& keys, bool delta) {
    checkpoint_manifest m;
    m.service = embedding_service_name;
    m.checkpoint = id;
    m.base = base;
    m.shard_count = 2;
    checkpoint_embedding entry{config(), {}};
    for (uint32_t s = 0; s < 2; ++s) {
      auto store = shard(rows, s, 2);
      auto rel = id + "/t/shard-" + std::to_string(s);
      std::vector<std::string_view> mine;
      for (auto& k : keys)
        if (compute::shard_of_key(k, 2) == s)
          mine.push_back(k);
      auto file = delta ? write_delta_file(dir, rel, config(), *store, mine)
                        : write_shard_file(dir, rel, config(), *store);
      EXPECT_TRUE(file) << render(file.error());
      entry.files.push_back(*file);
    }
    m.embeddings.push_back(entry);
    EXPECT_FALSE(checkpoint_dir{dir}.commit(m, 5));
    return m;
  }

  // What shard `index` of `count` holds after replaying the chain ending with `head`.
  std::map<std::string, float> replayed(const checkpoint_manifest& head, uint32_t index,
                                        uint32_t count) {
    auto chain = read_chain(checkpoint_dir{dir}, head);
    EXPECT_TRUE(chain) << render(chain.error());
    std::map<std::string, float> out;
    EXPECT_FALSE(replay_chain(dir, *chain, "t", index, count, [&](const row_record& r) {
      out[std::string{r.key}] = r.values[0];
      return caf::error{};
    }));
    return out;
  }

  test::temp_dir temp{"ckchain"};
  std::string dir = temp.path();
};

TEST_F(chain_replay_test, DeltasReplaceChangedRowsAndRemoveDeletedOnesOnAnyShardCount) {
  std::map<std::string, float> state{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}};
  auto full = commit("ckpt-x-1-1", "", state, {}, false);
  state["a"] = 10;
  state.erase("b");
  state["e"] = 5;
  auto delta = commit("ckpt-x-2-2", full.checkpoint, state, {"a", "b", "e"}, true);
  // A delta whose parts are whole (shards that lost their tracking) replaces what they held.
  state["c"] = 30;
  auto whole = commit("ckpt-x-3-3", delta.checkpoint, state, {}, false);
  auto chain = read_chain(checkpoint_dir{dir}, delta);
  ASSERT_TRUE(chain);
  ASSERT_EQ(chain->size(), 2u);
  EXPECT_EQ((*chain)[0].checkpoint, full.checkpoint);
  for (uint32_t count : {1u, 3u}) {
    std::map<std::string, float> merged;
    for (uint32_t s = 0; s < count; ++s)
      for (auto& kv : replayed(whole, s, count))
        merged.insert(kv);
    EXPECT_EQ(merged, state) << count << " shards";
  }
}

TEST_F(chain_replay_test, AMissingOrLoopingBaseIsACorruptChain) {
  auto full = commit("ckpt-x-1-1", "", {{"a", 1}}, {}, false);
  auto delta = commit("ckpt-x-2-2", "ckpt-x-0-0", {{"a", 1}}, {"a"}, true);
  auto missing = read_chain(checkpoint_dir{dir}, delta);
  ASSERT_FALSE(missing);
  EXPECT_TRUE(is(missing.error(), errc::corrupt_file)) << render(missing.error());
  auto looping = full;
  looping.base = looping.checkpoint;
  auto loop = read_chain(checkpoint_dir{dir}, looping);
  ASSERT_FALSE(loop);
  EXPECT_TRUE(is(loop.error(), errc::corrupt_file)) << render(loop.error());
}

} // namespace
} // namespace darcy::stores
