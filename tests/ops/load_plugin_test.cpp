#include "ops/load_plugin.hpp"

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/follow_chain.hpp"
#include "stores/embedding/memory_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops {
namespace {

TEST(load_plugin, AnExamplePluginsRuleTrainsATableAndLoadingItAgainChangesNothing) {
  compute::rule_registry registry;
  auto names = load_plugin(DARCY_RULE_EXAMPLE_PLUGIN, registry);
  ASSERT_TRUE(names) << render(names.error());
  EXPECT_EQ(*names, std::vector<std::string>{"frequency_sgd"});
  auto again = load_plugin(DARCY_RULE_EXAMPLE_PLUGIN, registry);
  ASSERT_TRUE(again) << render(again.error());
  EXPECT_EQ(*again, *names);
  EXPECT_EQ(registry.names(), std::vector<std::string>{"frequency_sgd"});

  // Into the process's registry, where a store finds it by name.
  ASSERT_TRUE(load_plugin(DARCY_RULE_EXAMPLE_PLUGIN));
  stores::memory_store_options opts;
  opts.dim = 2;
  opts.optimizer.rule = "frequency_sgd";
  opts.optimizer.params = {{"learning_rate", 0.5f}, {"warmup", 1}};
  auto store = stores::memory_store::make(opts);
  ASSERT_TRUE(store) << render(store.error());
  EXPECT_EQ((*store)->slot_floats(), 0u);
  std::string_view keys[] = {"k"};
  float before[2];
  ASSERT_FALSE((*store)->lookup(keys, before));
  const float grad[] = {1, -2};
  ASSERT_FALSE((*store)->update(keys, grad, 1));
  float after[2];
  ASSERT_FALSE((*store)->lookup(keys, after));
  // One lookup before the update: rate 0.5 / sqrt(1 + 1 / 1).
  const float rate = 0.5f / std::sqrt(2.0f);
  EXPECT_FLOAT_EQ(after[0], before[0] - rate);
  EXPECT_FLOAT_EQ(after[1], before[1] + 2 * rate);
}

/// Trains `keys` of table "slots" in `s` by one step of gradients `scale` * (k + 1, -(k + 1), ...).
void train_step(session& s, const de_config& cfg, const std::vector<std::string>& keys, float scale,
                int64_t step) {
  auto r = dynamic_embedding_lookup(s, keys, cfg, "slots");
  ASSERT_TRUE(r) << render(r.error());
  matrix grads(static_cast<Eigen::Index>(keys.size()), cfg.dim);
  for (Eigen::Index k = 0; k < grads.rows(); ++k)
    for (Eigen::Index d = 0; d < grads.cols(); ++d)
      grads(k, d) = scale * static_cast<float>((k + 1) * (d % 2 == 0 ? 1 : -1));
  ASSERT_FALSE(r->handle.backward(grads, step));
}

matrix rows_of(session& s, const de_config& cfg, const std::vector<std::string>& keys) {
  auto r = dynamic_embedding_lookup(s, keys, cfg, "slots", false);
  EXPECT_TRUE(r) << render(r.error());
  return r ? r->rows : matrix{};
}

// The copy's rows alone could match with its slots lost: the next step, Adagrad's, divides by
// the accumulator, so the same step on both sides agrees to the bit only if the slots came too.
TEST(load_plugin, APluginRulesSlotsFollowASyncChainOntoAServingCopyOfAnotherShardCount) {
  ASSERT_TRUE(load_plugin(DARCY_RULE_SLOTS_PLUGIN));
  test::temp_dir dir{"plugin_rule_sync"};
  auto sync_dir = dir.path() + "/sync";
  de_config cfg;
  cfg.dim = 4;
  cfg.init.kind = init_kind::uniform;
  cfg.init.low = -1;
  cfg.init.high = 1;
  cfg.optimizer.rule = "plugin_adagrad";
  cfg.optimizer.params = {{"learning_rate", 0.3f}, {"initial_accumulator", 0.2f}};
  session_options two, three;
  two.shards = 2;
  three.shards = 3;
  auto training = session::open(two);
  auto serving = session::open(three);
  ASSERT_TRUE(training && serving);
  std::vector<std::string> keys{"a", "b", "c", "d", "e"};

  ASSERT_NO_FATAL_FAILURE(train_step(**training, cfg, keys, 1.0f, 1));
  ASSERT_FALSE(save(**training, sync_dir, {1, "", {}}, 5));
  std::string held;
  auto first = follow_chain(**serving, sync_dir, held);
  ASSERT_TRUE(first) << render(first.error());
  EXPECT_TRUE(first->restored);
  ASSERT_NO_FATAL_FAILURE(train_step(**training, cfg, keys, 0.5f, 2));
  ASSERT_FALSE(save(**training, sync_dir, {2, "", {}}, 5));
  auto delta = follow_chain(**serving, sync_dir, held);
  ASSERT_TRUE(delta) << render(delta.error());
  EXPECT_FALSE(delta->restored);
  EXPECT_EQ(delta->applied, 1u);
  EXPECT_EQ(rows_of(**serving, cfg, keys), rows_of(**training, cfg, keys));

  ASSERT_NO_FATAL_FAILURE(train_step(**training, cfg, keys, 2.0f, 3));
  ASSERT_NO_FATAL_FAILURE(train_step(**serving, cfg, keys, 2.0f, 3));
  EXPECT_EQ(rows_of(**serving, cfg, keys), rows_of(**training, cfg, keys));
}

TEST(load_plugin, WhatIsNoUsablePluginIsAClearErrorThatRegistersNothing) {
  test::temp_dir dir{"load_plugin"};
  auto text = dir.path() + "/not_a_library.so";
  std::ofstream{text} << "not an ELF file\n";
  struct bad_case {
    const char* name;
    std::string path;
    errc code;
    const char* says;
  };
  const bad_case cases[] = {
    {"missing", dir.path() + "/none.so", errc::not_found, "none.so"},
    {"not a library", text, errc::io_error, "cannot load rule plugin"},
    {"no rules exported", DARCY_TEST_NOT_A_PLUGIN, errc::unsupported, "not a Darcy rule plugin"},
    {"another ABI", DARCY_TEST_ABI_MISMATCH, errc::unsupported, "was built for rule ABI 2"},
    {"malformed name", DARCY_TEST_BAD_NAME, errc::invalid_config, "rule name 'Bad-Name'"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    compute::rule_registry registry;
    auto names = load_plugin(c.path, registry);
    ASSERT_FALSE(names);
    EXPECT_TRUE(is(names.error(), c.code)) << render(names.error());
    EXPECT_NE(render(names.error()).find(c.says), std::string::npos) << render(names.error());
    EXPECT_TRUE(registry.names().empty());
  }
}

TEST(load_plugin, ATableNamingARuleThisProcessDoesNotKnowIsRefusedByName) {
  stores::memory_store_options opts;
  opts.dim = 2;
  opts.optimizer.rule = "never_loaded";
  auto store = stores::memory_store::make(opts);
  ASSERT_FALSE(store);
  EXPECT_TRUE(is(store.error(), errc::unknown_rule)) << render(store.error());
  EXPECT_NE(render(store.error()).find("'never_loaded'"), std::string::npos)
    << render(store.error());
}

} // namespace
} // namespace darcy::ops
