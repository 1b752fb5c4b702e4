#include "stores/embedding/de_config.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::stores {
namespace {

de_config valid() {
  de_config cfg;
  cfg.name = "user_emb";
  cfg.dim = 8;
  cfg.optimizer.kind = optimizer_kind::adagrad;
  return cfg;
}

TEST(de_config, RejectsEachBadFieldNamingTheEmbeddingAndTheField) {
  struct row {
    const char* name;
    void (*change)(de_config&);
    const char* expected;
  } rows[] = {
    {"empty_name", [](de_config& c) { c.name.clear(); }, "needs a name"},
    {"bad_name", [](de_config& c) { c.name = "a b"; }, "name may hold only"},
    {"zero_dim", [](de_config& c) { c.dim = 0; }, "dim must be in 1..65536"},
    {"huge_dim", [](de_config& c) { c.dim = 70000; }, "dim must be in 1..65536"},
    {"zero_batch", [](de_config& c) { c.max_batch = 0; }, "max_batch"},
    {"default_size",
     [](de_config& c) {
       c.default_value = {1, 2};
     },
     "default_value has 2"},
    {"bad_init",
     [](de_config& c) {
       c.init = {init_kind::uniform, 1, 0};
     },
     "low < high"},
    {"bad_lr", [](de_config& c) { c.optimizer.learning_rate = 0; }, "learning_rate"},
    {"bad_admission",
     [](de_config& c) {
       c.admission = {admission_kind::frequency, 0};
     },
     "min_count"},
    {"bad_eviction",
     [](de_config& c) {
       c.eviction = {eviction_kind::lru, 0, 0};
     },
     "max_rows"},
    {"unknown_sampler", [](de_config& c) { c.sampler.kind = sampler_kind{7}; }, "unknown sampler"},
    {"zero_power", [](de_config& c) { c.sampler.power = 0; }, "power"},
    {"nan_power", [](de_config& c) { c.sampler.power = std::nan(""); }, "power"},
    {"ann_over_redis",
     [](de_config& c) {
       c.ann.enabled = true;
       c.backend = backend_kind::redis;
       c.path = "redis://127.0.0.1:6379";
     },
     "ANN index needs the memory or leveldb backend"},
    {"ann_without_probes",
     [](de_config& c) {
       c.ann.enabled = true;
       c.ann.probes = 0;
     },
     "probes and rerank"},
    {"ann_without_refresh",
     [](de_config& c) {
       c.ann.enabled = true;
       c.ann.refresh_ms = 0;
     },
     "refresh_ms"},
  };
  EXPECT_FALSE(validate(valid()));
  for (auto& r : rows) {
    auto cfg = valid();
    r.change(cfg);
    auto err = validate(cfg);
    ASSERT_TRUE(is(err, errc::invalid_config)) << r.name;
    EXPECT_NE(render(err).find(r.expected), std::string::npos) << r.name << ": " << render(err);
    EXPECT_FALSE(make_store(cfg)) << r.name;
  }
}

TEST(de_config, SandboxStoreServesTheDefaultValueAndRefusesUpdates) {
  auto cfg = valid();
  cfg.dim = 2;
  cfg.read_only = true;
  cfg.default_value = {0.5f, -0.5f};
  auto store = make_store(cfg);
  ASSERT_TRUE(store) << render(store.error());
  std::string_view keys[] = {"never-seen"};
  std::vector<float> out(2);
  ASSERT_FALSE((*store)->lookup(keys, out));
  EXPECT_EQ(out, cfg.default_value);
  EXPECT_EQ((*store)->stats().rows, 0u);
  EXPECT_TRUE(is((*store)->update(keys, out, 1), errc::read_only));
}

} // namespace
} // namespace darcy::stores
