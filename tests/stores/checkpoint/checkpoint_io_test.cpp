#include "stores/checkpoint/checkpoint_io.hpp"

#include <filesystem>
#include <fstream>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include "messages/checkpoint.capnp.h"

#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

de_config adam_config() {
  de_config cfg;
  cfg.name = "items";
  cfg.dim = 4;
  cfg.optimizer = {optimizer_kind::adam, 0.01f};
  cfg.admission = {admission_kind::bloom, 2, 1000, 0.01};
  cfg.eviction = {eviction_kind::lru, 0, 5000};
  cfg.default_value = {1, 2, 3, 4};
  cfg.init.seed = 77;
  cfg.ann = {.enabled = true, .lists = 64, .probes = 9, .rerank = 33, .refresh_ms = 250};
  return cfg;
}

class checkpoint_io_test : public ::testing::Test {
protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() / ("darcy_ckpt_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string dir;
};

TEST_F(checkpoint_io_test, ManifestRoundTripKeepsConfigsFilesAndExtra) {
  checkpoint_manifest m;
  m.step = 1234;
  m.shard_count = 3;
  m.extra = std::string("dense\0state", 11);
  m.embeddings.push_back({adam_config(), {{"items/s0", 11, 5, 80}, {"items/s1", 22, 6, 96}}});
  ASSERT_FALSE(write_manifest(dir, m));
  auto back = read_manifest(dir);
  ASSERT_TRUE(back) << render(error_of(back));
  EXPECT_EQ(back->step, 1234);
  EXPECT_EQ(back->shard_count, 3u);
  EXPECT_EQ(back->extra, m.extra);
  ASSERT_EQ(back->embeddings.size(), 1u);
  auto& c = back->embeddings[0].config;
  auto expected = adam_config();
  EXPECT_EQ(c.name, expected.name);
  EXPECT_EQ(c.optimizer.kind, optimizer_kind::adam);
  EXPECT_EQ(c.admission.kind, admission_kind::bloom);
  EXPECT_EQ(c.eviction.max_rows, 5000u);
  EXPECT_EQ(c.default_value, expected.default_value);
  EXPECT_EQ(c.init.seed, 77u);
  EXPECT_TRUE(c.ann.enabled);
  EXPECT_EQ(c.ann.lists, 64u);
  EXPECT_EQ(c.ann.probes, 9u);
  EXPECT_EQ(c.ann.rerank, 33u);
  EXPECT_EQ(c.ann.refresh_ms, 250u);
  EXPECT_EQ(back->embeddings[0].files[1].path, "items/s1");
  EXPECT_EQ(back->embeddings[0].files[1].checksum, 22u);
}

TEST_F(checkpoint_io_test, ATablesUpdateRuleAndItsParametersRoundTrip) {
  struct rule_case {
    const char* name;
    std::string rule;
    std::vector<rule_value> params;
  };
  const rule_case cases[] = {{"the rule of its kind", "", {}},
                             {"a named rule", "rowwise_adagrad", {{"learning_rate", 0.25f}}},
                             {"two parameters", "decayed", {{"a", 1.5f}, {"b", -2}}}};
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    checkpoint_manifest m;
    auto cfg = adam_config();
    cfg.optimizer.rule = c.rule;
    cfg.optimizer.params = c.params;
    m.embeddings.push_back({cfg, {}});
    ASSERT_FALSE(write_manifest(dir, m));
    auto back = read_manifest(dir);
    ASSERT_TRUE(back) << render(error_of(back));
    auto& o = back->embeddings.at(0).config.optimizer;
    EXPECT_EQ(o.rule, c.rule);
    ASSERT_EQ(o.params.size(), c.params.size());
    for (size_t i = 0; i < c.params.size(); ++i) {
      EXPECT_EQ(o.params[i].name, c.params[i].name);
      EXPECT_EQ(o.params[i].value, c.params[i].value);
    }
  }
}

TEST_F(checkpoint_io_test, Format1ManifestReadsAsAnEmbeddingCheckpoint) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<Manifest>();
  root.setFormatVersion(1);
  root.setStep(9);
  root.setShardCount(2);
  auto words = capnp::messageToFlatArray(message);
  ASSERT_FALSE(base::write_file_atomically(dir + "/MANIFEST",
                                           {words.asChars().begin(), words.asChars().size()}));
  auto m = read_manifest(dir);
  ASSERT_TRUE(m) << render(m.error());
  EXPECT_EQ(m->service, embedding_service_name);
  EXPECT_EQ(m->step, 9);
  EXPECT_EQ(m->shard_count, 2u);
  // A later version, or format 3 without its checksum trailer, is refused.
  for (uint32_t version : {3u, 4u}) {
    root.setFormatVersion(version);
    words = capnp::messageToFlatArray(message);
    ASSERT_FALSE(base::write_file_atomically(dir + "/MANIFEST",
                                             {words.asChars().begin(), words.asChars().size()}));
    EXPECT_TRUE(is(error_of(read_manifest(dir)), errc::corrupt_file)) << version;
  }
}

// Issue 12, item 11: the manifest carries its own checksum, so no flipped byte or bit of it is
// ever accepted as another checkpoint.
TEST_F(checkpoint_io_test, NoSingleFlipOfTheManifestIsAccepted) {
  checkpoint_manifest m;
  m.service = embedding_service_name;
  m.checkpoint = "ckpt-7-1";
  m.step = 7;
  m.shard_count = 3;
  m.embeddings.push_back({adam_config(), {{"ckpt-7-1/items/shard-0", 99, 5, 1234}}});
  m.extra = "batch=7";
  ASSERT_FALSE(write_manifest(dir, m));
  auto good = base::read_file(dir + "/MANIFEST");
  ASSERT_TRUE(good);
  ASSERT_TRUE(read_manifest(dir));
  size_t accepted = 0, tried = 0;
  for (size_t i = 0; i < good->size(); ++i)
    for (unsigned char mask : {0x01, 0x10, 0x80, 0xFF}) {
      auto bad = *good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      ASSERT_FALSE(base::write_file_atomically(dir + "/MANIFEST", bad));
      auto read = read_manifest(dir);
      ++tried;
      if (read) {
        ++accepted;
        ADD_FAILURE() << "flip " << int{mask} << " at byte " << i << " was accepted";
      } else {
        EXPECT_TRUE(is(read.error(), errc::corrupt_file)) << render(read.error());
      }
    }
  EXPECT_EQ(accepted, 0u) << "of " << tried;
}

TEST_F(checkpoint_io_test, ADamagedOrMissingManifestFailsWithCorruptFileOrNotFound) {
  ASSERT_FALSE(write_manifest(dir, checkpoint_manifest{}));
  fs::resize_file(dir + "/MANIFEST", 4);
  EXPECT_TRUE(is(error_of(read_manifest(dir)), errc::corrupt_file));
  EXPECT_TRUE(is(error_of(read_manifest(dir + "/nowhere")), errc::not_found));
}

} // namespace
} // namespace darcy::stores
