#include "stores/checkpoint/checkpoint_io.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

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

  // A store with trained rows: every state field differs from its default.
  std::unique_ptr<embedding_store> trained() {
    auto cfg = adam_config();
    cfg.admission = {};
    auto store = make_store(cfg);
    EXPECT_TRUE(store);
    std::vector<std::string> keys{"a", "bb", std::string("nul\0key", 7), "ünïcødé"};
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<float> out(keys.size() * 4), grads(keys.size() * 4, 0.25f);
    EXPECT_FALSE((*store)->lookup(views, out));
    for (int step = 1; step <= 3; ++step)
      EXPECT_FALSE((*store)->update(views, grads, step));
    return std::move(*store);
  }

  std::string dir;
};

TEST_F(checkpoint_io_test, ShardFileRoundTripKeepsEveryRowStateBitForBit) {
  auto store = trained();
  auto info = write_shard_file(dir, "items/shard-0", adam_config(), *store);
  ASSERT_TRUE(info) << render(error_of(info));
  EXPECT_EQ(info->rows, 4u);
  std::map<std::string,
           std::tuple<std::vector<float>, std::vector<float>, uint64_t, uint64_t, int64_t>>
    saved, loaded;
  store->export_rows([&](const row_record& r) {
    saved[std::string{r.key}] = {{r.values.begin(), r.values.end()},
                                 {r.slots.begin(), r.slots.end()},
                                 r.frequency,
                                 r.updates,
                                 r.last_update};
  });
  ASSERT_FALSE(read_shard_file(dir, *info, adam_config(), [&](const row_record& r) {
    loaded[std::string{r.key}] = {{r.values.begin(), r.values.end()},
                                  {r.slots.begin(), r.slots.end()},
                                  r.frequency,
                                  r.updates,
                                  r.last_update};
    return caf::error{};
  }));
  EXPECT_EQ(loaded, saved);
  EXPECT_EQ(std::get<3>(loaded["a"]), 3u) << "three updates";
}

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
  EXPECT_EQ(back->embeddings[0].files[1].path, "items/s1");
  EXPECT_EQ(back->embeddings[0].files[1].checksum, 22u);
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

TEST_F(checkpoint_io_test, TruncatedCorruptedOrMissingFilesFailWithCorruptFile) {
  auto store = trained();
  auto info = write_shard_file(dir, "s0", adam_config(), *store);
  ASSERT_TRUE(info);
  auto path = dir + "/s0";
  auto original = fs::file_size(path);
  auto ignore = [](const row_record&) { return caf::error{}; };
  struct row {
    const char* name;
    std::function<void()> damage;
  } rows[] = {
    {"truncated", [&] { fs::resize_file(path, original / 2); }},
    {"flipped_byte",
     [&] {
       std::fstream f{path, std::ios::in | std::ios::out | std::ios::binary};
       f.seekp(static_cast<std::streamoff>(original / 2));
       f.put('\x7f');
     }},
    {"missing", [&] { fs::remove(path); }},
  };
  for (auto& r : rows) {
    ASSERT_TRUE(write_shard_file(dir, "s0", adam_config(), *store));
    r.damage();
    auto err = read_shard_file(dir, *info, adam_config(), ignore);
    EXPECT_TRUE(is(err, errc::corrupt_file)) << r.name << ": " << render(err);
  }
  // A damaged manifest.
  ASSERT_FALSE(write_manifest(dir, checkpoint_manifest{}));
  fs::resize_file(dir + "/MANIFEST", 4);
  EXPECT_TRUE(is(error_of(read_manifest(dir)), errc::corrupt_file));
  EXPECT_TRUE(is(error_of(read_manifest(dir + "/nowhere")), errc::not_found));
}

TEST_F(checkpoint_io_test, FileOfAnotherDimIsRefused) {
  auto store = trained();
  auto info = write_shard_file(dir, "s0", adam_config(), *store);
  ASSERT_TRUE(info);
  auto other = adam_config();
  other.dim = 8;
  auto err = read_shard_file(dir, *info, other, [](const row_record&) { return caf::error{}; });
  EXPECT_TRUE(is(err, errc::dimension_mismatch)) << render(err);
}

} // namespace
} // namespace darcy::stores

namespace darcy::stores {
namespace {

TEST_F(checkpoint_io_test, StoresExportToAndImportFromStreams) {
  auto store = trained();
  std::stringstream stream;
  ASSERT_FALSE(store->export_to(stream, "items"));
  auto cfg = adam_config();
  cfg.admission = {};
  cfg.eviction = {};
  cfg.backend = backend_kind::leveldb;
  cfg.path = dir + "/imported";
  auto target = make_store(cfg);
  ASSERT_TRUE(target) << render(error_of(target));
  ASSERT_FALSE((*target)->import_from(stream));
  std::map<std::string, std::vector<float>> a, b;
  store->export_rows([&](const row_record& r) {
    a[std::string{r.key}] = {r.slots.begin(), r.slots.end()};
  });
  (*target)->export_rows([&](const row_record& r) {
    b[std::string{r.key}] = {r.slots.begin(), r.slots.end()};
  });
  EXPECT_EQ(a, b);
  // A truncated stream is refused.
  std::stringstream whole;
  ASSERT_FALSE(store->export_to(whole, "items"));
  auto text = whole.str();
  std::stringstream cut{text.substr(0, text.size() / 2)};
  auto fresh = make_store(adam_config());
  auto cut_err = (*fresh)->import_from(cut);
  EXPECT_TRUE(is(cut_err, errc::corrupt_file)) << render(cut_err);
}

} // namespace
} // namespace darcy::stores
