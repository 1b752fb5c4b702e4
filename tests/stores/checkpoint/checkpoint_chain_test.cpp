// The chain of a checkpoint (full first), and the newest checkpoint whose whole chain is on
// this disk: the current one, or an older one when a save's parts never reached this host.
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
    ASSERT_FALSE(root.prepare());
    std::vector<checkpoint_manifest> saved;
    saved.push_back(save(root, "1", ""));
    saved.push_back(save(root, "2", saved[0].checkpoint));
    saved.push_back(save(root, "3", saved[1].checkpoint));
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

} // namespace
} // namespace darcy::stores
