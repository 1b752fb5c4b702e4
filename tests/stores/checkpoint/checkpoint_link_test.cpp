// stores/checkpoint/checkpoint_link: a checkpoint read with its parts' bytes installs under
// another root as the same checkpoint, and a link that is damaged, miscounted or that names a
// path outside its checkpoint is refused, leaving the root as it was.
#include "stores/checkpoint/checkpoint_link.hpp"

#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

/// A committed checkpoint of `root` with an embedding part (two levels deep, as a shard's) and a
/// plain part.
checkpoint_manifest save(const checkpoint_dir& root) {
  auto id = checkpoint_dir::new_id("link");
  checkpoint_manifest m;
  m.service = embedding_service_name;
  m.checkpoint = id;
  m.step = 7;
  auto rows = root.write_part(id + "/words/shard-0", "rows of words", 3);
  auto extra = root.write_part(id + "/plain", "a plain part");
  EXPECT_TRUE(rows && extra);
  m.embeddings.push_back({de_config{.name = "words", .dim = 4}, {*rows}});
  m.parts.push_back(*extra);
  EXPECT_FALSE(root.commit(m));
  return m;
}

TEST(checkpoint_link, a_link_installs_under_another_root_as_the_same_checkpoint) {
  test::temp_dir temp{"cklink"};
  checkpoint_dir from{temp.path() + "/from"}, to{temp.path() + "/to"};
  ASSERT_FALSE(from.prepare());
  auto m = save(from);
  auto link = read_link(from, m);
  ASSERT_TRUE(link) << render(link.error());
  ASSERT_EQ(link->parts.size(), 2u);
  EXPECT_EQ(link->parts[0], "rows of words");
  std::filesystem::remove_all(from.root()); // nothing of the first root is read again
  ASSERT_FALSE(install_link(to, *link, 1));
  auto head = to.read_manifest();
  ASSERT_TRUE(head) << render(head.error());
  EXPECT_EQ(head->checkpoint, m.checkpoint);
  EXPECT_EQ(head->step, 7);
  EXPECT_FALSE(to.verify(*head));
  EXPECT_EQ(*to.read_part(head->embeddings[0].files[0]), "rows of words");
}

TEST(checkpoint_link, a_damaged_miscounted_or_escaping_link_is_refused_and_installs_nothing) {
  test::temp_dir temp{"cklink_bad"};
  checkpoint_dir from{temp.path() + "/from"};
  ASSERT_FALSE(from.prepare());
  auto good = read_link(from, save(from));
  ASSERT_TRUE(good);
  struct {
    const char* name;
    std::function<void(checkpoint_link&)> damage;
    errc code;
  } cases[] = {
    {"a part's byte changed", [](checkpoint_link& l) { l.parts[0][0] ^= 1; }, errc::corrupt_file},
    {"a part cut short", [](checkpoint_link& l) { l.parts[1].pop_back(); }, errc::corrupt_file},
    {"a part missing", [](checkpoint_link& l) { l.parts.pop_back(); }, errc::corrupt_file},
    {"a part too many", [](checkpoint_link& l) { l.parts.push_back("x"); }, errc::corrupt_file},
    {"a checkpoint named ..", [](checkpoint_link& l) { l.manifest.checkpoint = ".."; },
     errc::invalid_argument},
    {"a part above its checkpoint",
     [](checkpoint_link& l) { l.manifest.parts[0].path = l.manifest.checkpoint + "/../../x"; },
     errc::invalid_argument},
    {"a part in another checkpoint",
     [](checkpoint_link& l) { l.manifest.parts[0].path = "ckpt-other/plain"; },
     errc::invalid_argument},
    {"a part that is its checkpoint's folder",
     [](checkpoint_link& l) { l.manifest.parts[0].path = l.manifest.checkpoint + "/"; },
     errc::invalid_argument},
  };
  for (auto& c : cases) {
    checkpoint_dir to{temp.path() + "/to"};
    auto link = *good;
    c.damage(link);
    auto err = install_link(to, link, 1);
    EXPECT_TRUE(is(err, c.code)) << c.name << ": " << render(err);
    EXPECT_TRUE(is(to.read_manifest().error(), errc::not_found)) << c.name;
    EXPECT_FALSE(std::filesystem::exists(temp.path() + "/x")) << c.name;
  }
}

} // namespace
} // namespace darcy::stores
