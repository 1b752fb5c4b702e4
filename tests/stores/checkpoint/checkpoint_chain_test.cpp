// The chain of a checkpoint (full first), the newest checkpoint whose whole chain is on this
// disk (the current one, or an older one when a save's parts never reached this host), and
// making an older checkpoint the current one.
#include "stores/checkpoint/checkpoint_chain.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

/// Commits a checkpoint on `base` (empty: a full one) with one embedding part, keeping 2
/// chains.
checkpoint_manifest save(const checkpoint_dir& root, const std::string& label,
                         const std::string& base) {
  auto id = checkpoint_dir::new_id(label);
  checkpoint_manifest m;
  m.service = embedding_service_name;
  m.checkpoint = id;
  m.base = base;
  auto part = root.write_part(id + "/t/shard-0", "rows of " + label, 1);
  EXPECT_TRUE(part) << render(part.error());
  m.embeddings.push_back({{}, {*part}});
  EXPECT_FALSE(root.commit(m, 2));
  return m;
}

/// Three checkpoints in a prepared `root`: a full one, a delta on it, then a delta on that
/// or, with `new_chain`, a full one that starts another chain.
std::vector<checkpoint_manifest> three_saves(const checkpoint_dir& root, bool new_chain) {
  EXPECT_FALSE(root.prepare());
  std::vector<checkpoint_manifest> saved;
  saved.push_back(save(root, "1", ""));
  saved.push_back(save(root, "2", saved[0].checkpoint));
  saved.push_back(save(root, "3", new_chain ? "" : saved[1].checkpoint));
  return saved;
}

TEST(checkpoint_chain, the_newest_whole_checkpoint_is_the_current_one_or_the_newest_before_a_gap) {
  struct gap_case {
    const char* what;
    /// Index of the checkpoint (0: the full one, 1 and 2: deltas) whose part is removed or
    /// truncated; -1: none.
    int damaged;
    bool truncate;
    /// Index of the checkpoint expected; -1: none (errc::not_found).
    int want;
  };
  for (auto& c : std::vector<gap_case>{
         {"every part here: the current one", -1, false, 2},
         {"the head's part never fetched: the delta before it", 2, false, 1},
         {"the head's part of another size: the delta before it", 2, true, 1},
         {"a delta in the middle missing: only the full one", 1, false, 0},
         {"the full one missing: none", 0, false, -1},
       }) {
    SCOPED_TRACE(c.what);
    test::temp_dir temp{"chain_whole"};
    checkpoint_dir root{temp.path()};
    auto saved = three_saves(root, false);
    if (c.damaged >= 0) {
      auto part = fs::path{temp.path()} / saved[c.damaged].embeddings[0].files[0].path;
      if (c.truncate)
        fs::resize_file(part, 2);
      else
        fs::remove(part);
    }
    auto whole = newest_whole_checkpoint(root);
    if (c.want < 0) {
      ASSERT_FALSE(whole);
      EXPECT_TRUE(is(whole.error(), errc::not_found)) << render(whole.error());
      continue;
    }
    ASSERT_TRUE(whole) << render(whole.error());
    EXPECT_EQ(whole->checkpoint, saved[c.want].checkpoint);
  }
}

TEST(checkpoint_chain, make_current_points_the_root_at_a_held_checkpoint_and_removes_none) {
  struct current_case {
    const char* what;
    /// Index of the checkpoint made current (0: a full one, 1: its delta, 2: the next full
    /// one); -1: an id the root never held.
    int made;
    /// Index of a checkpoint whose part is removed first; -1: none.
    int damaged;
    bool found;
  };
  for (auto& c : std::vector<current_case>{
         {"the current one: nothing changes", 2, -1, true},
         {"an older full one", 0, -1, true},
         {"an older delta: its chain replays", 1, -1, true},
         {"an id never saved here", -1, -1, false},
         {"a delta whose full one lost a part", 1, 0, false},
       }) {
    SCOPED_TRACE(c.what);
    test::temp_dir temp{"chain_current"};
    checkpoint_dir root{temp.path()};
    auto saved = three_saves(root, true);
    if (c.damaged >= 0)
      fs::remove(fs::path{temp.path()} / saved[c.damaged].embeddings[0].files[0].path);
    auto held = root.checkpoints();
    auto id = c.made < 0 ? checkpoint_dir::new_id("9") : saved[c.made].checkpoint;
    auto err = make_current(root, id);
    auto current = root.read_manifest();
    ASSERT_TRUE(current) << render(current.error());
    EXPECT_EQ(root.checkpoints(), held);
    if (!c.found) {
      EXPECT_TRUE(is(err, errc::not_found)) << render(err);
      EXPECT_EQ(current->checkpoint, saved[2].checkpoint);
      continue;
    }
    ASSERT_FALSE(err) << render(err);
    EXPECT_EQ(current->checkpoint, id);
    auto chain = read_chain(root, *current);
    ASSERT_TRUE(chain) << render(chain.error());
    EXPECT_EQ(chain->size(), c.made == 1 ? 2u : 1u);
  }
}

} // namespace
} // namespace darcy::stores
