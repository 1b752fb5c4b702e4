#include "stores/checkpoint/checkpoint_transaction.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

/// A transaction with one part "a" written under its id.
checkpoint_transaction with_a_part(const std::string& root, file_info& part) {
  auto t = checkpoint_transaction::begin(root, "t");
  EXPECT_TRUE(t) << render(t.error());
  auto written = t->root().write_part(t->id() + "/a", "payload", 1);
  EXPECT_TRUE(written) << render(written.error());
  part = *written;
  return std::move(*t);
}

TEST(checkpoint_transaction, a_commit_names_its_parts_and_an_unfinished_one_leaves_nothing) {
  enum class ending { commit, discard, dropped };
  struct {
    const char* what;
    ending how;
    bool committed;
  } cases[] = {
    {"committed", ending::commit, true},
    {"discarded", ending::discard, false},
    {"dropped without an ending (a failed save's early return)", ending::dropped, false},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    test::temp_dir dir{"ckpt_transaction"};
    std::string id;
    {
      file_info part;
      auto t = with_a_part(dir.path(), part);
      id = t.id();
      EXPECT_TRUE(fs::exists(dir.path() + "/" + id));
      if (c.how == ending::commit) {
        checkpoint_manifest m;
        m.service = wals_service_name;
        m.parts = {part};
        ASSERT_FALSE(t.commit(m, 1));
        auto again = t.commit(m, 1);
        EXPECT_TRUE(is(again, errc::invalid_argument)) << render(again);
      } else if (c.how == ending::discard) {
        t.discard();
      }
    }
    auto manifest = checkpoint_dir{dir.path()}.read_manifest();
    EXPECT_EQ(fs::exists(dir.path() + "/" + id), c.committed);
    EXPECT_EQ(static_cast<bool>(manifest), c.committed);
    if (manifest) {
      EXPECT_EQ(manifest->checkpoint, id) << "the manifest takes the transaction's id";
      EXPECT_EQ(manifest->parts.size(), 1u);
    }
  }
}

TEST(checkpoint_transaction, a_root_that_cannot_be_written_is_refused_at_begin) {
  test::temp_dir dir{"ckpt_transaction_file"};
  auto file = dir.path() + "/file";
  ASSERT_FALSE(base::write_file_atomically(file, "x"));
  auto t = checkpoint_transaction::begin(file + "/model", "t");
  ASSERT_FALSE(t);
  EXPECT_TRUE(is(t.error(), errc::io_error)) << render(t.error());
}

} // namespace
} // namespace darcy::stores
