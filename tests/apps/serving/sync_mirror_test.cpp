// apps/serving/sync_mirror: a served model's copy of its training run's sync folder takes the
// deltas that follow the link the model holds, any whole chain, and repeats; it refuses, installing
// nothing, a sync of another table layout, deltas after a gap, and links that do not chain.
#include "apps/serving/sync_mirror.hpp"

#include <functional>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::serving {
namespace {

using ops::online::sync_message;

/// A training run's sync folder with a chain of a full checkpoint and three deltas.
class sync_mirror_test : public testing::Test {
protected:
  void SetUp() override {
    auto s = ops::session::open({});
    ASSERT_TRUE(s) << render(s.error());
    for (auto key : {"a", "b", "c", "d"}) {
      ASSERT_TRUE(ops::dynamic_embedding_lookup(**s, {key}, tables_[0], "words"));
      ASSERT_FALSE(ops::save(**s, dir_, {static_cast<int64_t>(ids_.size() + 1), "", {}}, 10));
      ids_.push_back(stores::checkpoint_dir{dir_}.read_manifest()->checkpoint);
    }
  }

  /// The links after `held` (all when empty).
  sync_message after(const std::string& held) {
    auto m = ops::online::read_sync(dir_, held, "");
    EXPECT_TRUE(m) << render(m.error());
    return m ? *m : sync_message{};
  }

  /// The head of the mirror's folder.
  std::string head(const sync_mirror& mirror) {
    auto m = stores::checkpoint_dir{mirror.dir()}.read_manifest();
    return m ? m->checkpoint : "";
  }

  test::temp_dir temp_{"sync_mirror"};
  std::string dir_ = temp_.path() + "/training";
  std::vector<de_config> tables_{de_config{.name = "words", .dim = 4}};
  std::vector<std::string> ids_;
};

TEST_F(sync_mirror_test, takes_the_deltas_after_the_link_held_any_whole_chain_and_repeats) {
  sync_mirror mirror{temp_.path() + "/mirror"};
  // A new mirror holds nothing: deltas are out of order, the whole chain is taken.
  EXPECT_TRUE(is(mirror.install(after(ids_[1]), "", tables_), errc::out_of_order));
  EXPECT_EQ(head(mirror), "");
  auto chain = after("");
  chain.rows.resize(2); // the full checkpoint and the first delta
  EXPECT_FALSE(mirror.install(chain, "", tables_));
  EXPECT_EQ(head(mirror), ids_[1]);
  // The model holds ids_[1]: the next delta is taken, a repeat of it too.
  auto next = after(ids_[1]);
  next.rows.resize(1);
  EXPECT_FALSE(mirror.install(next, ids_[1], tables_));
  EXPECT_EQ(head(mirror), ids_[2]);
  EXPECT_FALSE(mirror.install(next, ids_[2], tables_)) << "a repeat of the link held";
  // A lost delta: ids_[3] applies on ids_[2], which the model does not hold yet.
  EXPECT_TRUE(is(mirror.install(after(ids_[2]), ids_[1], tables_), errc::out_of_order));
  EXPECT_EQ(head(mirror), ids_[2]);
  EXPECT_FALSE(mirror.install(after(""), ids_[1], tables_)) << "the whole chain heals it";
  EXPECT_EQ(head(mirror), ids_[3]);
}

TEST_F(sync_mirror_test, refuses_another_layout_a_gap_and_links_that_do_not_chain) {
  struct {
    const char* name;
    std::function<void(sync_message&)> change;
    std::string held;
    errc code;
  } cases[] = {
    {"a table the model lacks",
     [](sync_message& m) { m.rows[0].manifest.embeddings[0].config.name = "other"; }, "",
     errc::invalid_argument},
    {"another dimension", [](sync_message& m) { m.rows[0].manifest.embeddings[0].config.dim = 8; },
     "", errc::invalid_argument},
    {"a link of another service", [](sync_message& m) { m.rows[0].manifest.service = "wals"; }, "",
     errc::invalid_argument},
    {"dense weights of another service", [](sync_message& m) { m.dense.push_back(m.rows[0]); }, "",
     errc::invalid_argument},
    {"links that do not chain", [](sync_message& m) { std::swap(m.rows[1], m.rows[2]); }, "",
     errc::corrupt_file},
    {"deltas without the link they apply on", [](sync_message& m) { m.rows.erase(m.rows.begin()); },
     "", errc::out_of_order},
    {"a damaged part", [](sync_message& m) { m.rows[3].parts[0][0] ^= 1; }, "", errc::corrupt_file},
  };
  for (auto& c : cases) {
    sync_mirror mirror{temp_.path() + "/mirror-" + std::to_string(&c - cases)};
    auto m = after("");
    c.change(m);
    EXPECT_TRUE(is(mirror.install(m, c.held, tables_), c.code)) << c.name;
    EXPECT_EQ(head(mirror), "") << c.name << ": nothing installed";
  }
}

// A training run's new chain, sent as an empty delta on the link the mirror holds: the mirror's
// chain goes on through it, and a copy restored from the mirror holds the training's rows.
TEST_F(sync_mirror_test, a_new_chain_sent_as_an_empty_delta_carries_the_mirrors_chain_on) {
  auto training = ops::session::open({});
  ASSERT_TRUE(training) << render(training.error());
  auto dir = temp_.path() + "/chains";
  sync_mirror mirror{temp_.path() + "/mirror"};
  std::vector<std::string> keys;
  std::string held, first;
  bool elided = false;
  for (int64_t step = 1; step <= 8; ++step) {
    keys.push_back("k" + std::to_string(step));
    ASSERT_TRUE(ops::dynamic_embedding_lookup(**training, {keys.back()}, tables_[0], "words"));
    ASSERT_FALSE(ops::save(**training, dir, {step, "", {}}, 2));
    auto m = ops::online::read_sync(dir, held, "", true);
    ASSERT_TRUE(m) << render(m.error());
    elided = elided || ops::online::carries_elided_full(*m);
    ASSERT_FALSE(mirror.install(*m, held, tables_)) << step;
    held = m->rows.back().manifest.checkpoint;
    if (first.empty())
      first = held;
    EXPECT_EQ(head(mirror), held);
  }
  ASSERT_TRUE(elided) << "8 saves of 2 deltas a chain start new chains";
  stores::checkpoint_dir root{mirror.dir()};
  auto chain = stores::read_chain(root, *root.read_manifest());
  ASSERT_TRUE(chain) << render(chain.error());
  EXPECT_EQ(chain->front().checkpoint, first) << "one chain from the first full checkpoint on";
  EXPECT_EQ(chain->back().checkpoint, held);
  auto copy = ops::session::open({});
  ASSERT_TRUE(copy);
  ASSERT_TRUE(ops::restore(**copy, mirror.dir()));
  std::vector<std::string> all(keys.begin(), keys.end());
  auto want = ops::dynamic_embedding_lookup(**training, all, tables_[0], "words");
  auto got = ops::dynamic_embedding_lookup(**copy, all, tables_[0], "words");
  ASSERT_TRUE(want && got);
  EXPECT_EQ(want->rows, got->rows);
  auto rows = ops::stats(**copy, "words");
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->rows, keys.size());
}

TEST_F(sync_mirror_test, a_mirror_without_a_folder_makes_one_and_removes_it) {
  std::string made;
  {
    sync_mirror mirror;
    EXPECT_EQ(mirror.dir(), "");
    EXPECT_FALSE(mirror.install(after(""), "", tables_));
    made = mirror.dir();
    EXPECT_EQ(head(mirror), ids_[3]);
  }
  EXPECT_FALSE(std::filesystem::exists(made));
}

} // namespace
} // namespace darcy::serving
