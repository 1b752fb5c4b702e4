// ops/online/sync_message: a sync folder's links after what a receiver holds (the rest of the
// chain, or all of it when the receiver holds none of it), and the message's bytes, which decode
// to the same links and refuse to decode when cut, padded or not a sync message.
#include "ops/online/sync_message.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/export/export.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops::online {
namespace {

/// A sync folder holding a chain of a full checkpoint and two deltas; their ids, oldest first.
class sync_message_test : public testing::Test {
protected:
  void SetUp() override {
    auto opened = session::open({});
    ASSERT_TRUE(opened) << render(opened.error());
    s_ = std::move(*opened);
    de_config cfg{.name = "words", .dim = 4};
    for (auto key : {"a", "b", "c"}) {
      ASSERT_TRUE(dynamic_embedding_lookup(*s_, {key}, cfg, "words"));
      ASSERT_FALSE(save(*s_, dir_, {static_cast<int64_t>(ids_.size() + 1), "", {}}, 5));
      ids_.push_back(stores::checkpoint_dir{dir_}.read_manifest()->checkpoint);
    }
  }

  std::vector<std::string> checkpoints_of(const sync_message& m) {
    std::vector<std::string> out;
    for (auto& link : m.rows)
      out.push_back(link.manifest.checkpoint);
    return out;
  }

  test::temp_dir temp_{"sync_message"};
  std::string dir_ = temp_.path() + "/sync";
  std::unique_ptr<session> s_;
  std::vector<std::string> ids_;
};

TEST_F(sync_message_test, a_receiver_gets_the_links_after_the_one_it_holds_or_the_whole_chain) {
  struct {
    const char* name;
    std::string held;
    std::vector<std::string> sent;
  } cases[] = {
    {"nothing held", "", ids_},
    {"the full checkpoint held", ids_[0], {ids_[1], ids_[2]}},
    {"the first delta held", ids_[1], {ids_[2]}},
    {"the head held", ids_[2], {}},
    {"a link of another chain held", "ckpt-elsewhere-1-1", ids_},
  };
  for (auto& c : cases) {
    auto m = read_sync(dir_, c.held, "");
    ASSERT_TRUE(m) << c.name << ": " << render(m.error());
    EXPECT_EQ(checkpoints_of(*m), c.sent) << c.name;
    EXPECT_TRUE(m->dense.empty()) << c.name << ": the folder holds no dense sync";
    if (!m->rows.empty()) {
      EXPECT_EQ(m->rows.front().manifest.base.empty(), c.sent.size() == ids_.size()) << c.name;
    }
  }
  EXPECT_TRUE(is(read_sync(temp_.path() + "/none", "", "").error(), errc::not_found));
}

// A new chain whose full checkpoint is the state of a delta at or after the one the receiver
// holds goes as the deltas up to that one, then the full checkpoint as an empty delta on it;
// held elsewhere, or not asked, it goes whole.
TEST_F(sync_message_test, a_new_chain_at_a_state_after_the_one_held_is_sent_as_an_empty_delta) {
  auto dir = temp_.path() + "/chains";
  checkpoint_manifest head;
  std::vector<std::string> ids;
  for (int64_t step = 1; step <= 8 && head.same_as.empty(); ++step) {
    ASSERT_TRUE(dynamic_embedding_lookup(*s_, {"k" + std::to_string(step)},
                                         de_config{.name = "words", .dim = 4}, "words"));
    ASSERT_FALSE(save(*s_, dir, {step, "", {}}, 2));
    head = *stores::checkpoint_dir{dir}.read_manifest();
    ids.push_back(head.checkpoint);
  }
  ASSERT_FALSE(head.same_as.empty()) << "two deltas, then a new chain at the last one's state";
  auto last_delta = *stores::checkpoint_dir{dir}.read_manifest_of(head.same_as);
  struct {
    const char* name;
    std::string held;
    std::vector<std::string> sent;
  } elided[] = {
    {"the last delta held", last_delta.checkpoint, {head.checkpoint}},
    {"the link before it held", last_delta.base, {last_delta.checkpoint, head.checkpoint}}};
  for (auto& c : elided) {
    auto m = read_sync(dir, c.held, "", true);
    ASSERT_TRUE(m) << c.name << ": " << render(m.error());
    ASSERT_EQ(checkpoints_of(*m), c.sent) << c.name;
    EXPECT_TRUE(carries_elided_full(*m)) << c.name;
    auto& full = m->rows.back();
    EXPECT_EQ(full.manifest.base, last_delta.checkpoint) << c.name << ": an empty delta on it";
    EXPECT_TRUE(full.manifest.embeddings.empty()) << c.name;
    EXPECT_TRUE(full.parts.empty()) << c.name;
  }
  struct {
    const char* name;
    std::string held;
    bool elide;
  } whole[] = {{"not asked", last_delta.checkpoint, false},
               {"another link held", "ckpt-elsewhere-1-1", true},
               {"nothing held", "", true}};
  for (auto& c : whole) {
    auto m = read_sync(dir, c.held, "", c.elide);
    ASSERT_TRUE(m) << c.name;
    EXPECT_FALSE(carries_elided_full(*m)) << c.name;
    ASSERT_EQ(checkpoints_of(*m), std::vector<std::string>{head.checkpoint}) << c.name;
    EXPECT_TRUE(m->rows.front().manifest.base.empty()) << c.name << ": the full checkpoint";
    EXPECT_FALSE(m->rows.front().parts.empty()) << c.name;
  }
}

TEST_F(sync_message_test, a_message_decodes_to_its_links_and_damaged_bytes_are_refused) {
  auto m = read_sync(dir_, "", "");
  ASSERT_TRUE(m);
  auto bytes = encode(*m);
  ASSERT_TRUE(bytes);
  EXPECT_TRUE(is_sync_message(*bytes));
  EXPECT_FALSE(is_sync_message(R"({"dir": "/x"})"));
  auto back = decode_sync_message(*bytes);
  ASSERT_TRUE(back) << render(back.error());
  EXPECT_EQ(checkpoints_of(*back), ids_);
  for (size_t i = 0; i < m->rows.size(); ++i)
    EXPECT_EQ(back->rows[i].parts, m->rows[i].parts) << i;
  EXPECT_EQ(part_bytes(*back), part_bytes(*m));
  EXPECT_GT(part_bytes(*m), 0u);
  struct {
    const char* name;
    std::string bytes;
  } damaged[] = {
    {"cut in its last part", bytes->substr(0, bytes->size() - 1)},
    {"cut after its header", bytes->substr(0, 20)},
    {"with bytes after it", *bytes + "x"},
    {"not a sync message", "{\"dir\": \"/x\"}"},
    {"empty", ""},
  };
  for (auto& d : damaged)
    EXPECT_TRUE(is(decode_sync_message(d.bytes).error(), errc::corrupt_file)) << d.name;
}

} // namespace
} // namespace darcy::ops::online
