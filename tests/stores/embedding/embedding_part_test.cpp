// Tests stores/embedding/embedding_part: a shard's part written and read back bit for bit,
// damaged or foreign parts refused, and a store's rows through an export stream.
#include "stores/embedding/embedding_part.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "stores/embedding/de_config.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

/// An Adam table: every row has values and two slots.
de_config part_config() {
  de_config cfg{.name = "items", .dim = 4};
  cfg.optimizer = {optimizer_kind::adam, 0.01f};
  cfg.init.seed = 77;
  return cfg;
}

class embedding_part_test : public ::testing::Test {
protected:
  test::temp_dir tmp{"embedding_part"};
  std::string dir = tmp.path();

  // A store with trained rows: every state field differs from its default.
  std::unique_ptr<embedding_store> trained() {
    auto store = make_store(part_config());
    EXPECT_TRUE(store);
    std::vector<std::string> keys{"a", "bb", std::string("nul\0key", 7), "ünïcødé"};
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<float> out(keys.size() * 4), grads(keys.size() * 4, 0.25f);
    EXPECT_FALSE((*store)->lookup(views, out));
    for (int step = 1; step <= 3; ++step)
      EXPECT_FALSE((*store)->update(views, grads, step));
    return std::move(*store);
  }
};

TEST_F(embedding_part_test, ShardFileRoundTripKeepsEveryRowStateBitForBit) {
  auto store = trained();
  auto info = write_shard_file(dir, "items/shard-0", part_config(), *store);
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
  ASSERT_FALSE(read_shard_file(dir, *info, part_config(), [&](const row_record& r) {
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

TEST_F(embedding_part_test, TruncatedCorruptedOrMissingFilesFailWithCorruptFile) {
  auto store = trained();
  auto info = write_shard_file(dir, "s0", part_config(), *store);
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
    ASSERT_TRUE(write_shard_file(dir, "s0", part_config(), *store));
    r.damage();
    auto err = read_shard_file(dir, *info, part_config(), ignore);
    EXPECT_TRUE(is(err, errc::corrupt_file)) << r.name << ": " << render(err);
  }
}

TEST_F(embedding_part_test, FileOfAnotherDimIsRefused) {
  auto store = trained();
  auto info = write_shard_file(dir, "s0", part_config(), *store);
  ASSERT_TRUE(info);
  auto other = part_config();
  other.dim = 8;
  auto err = read_shard_file(dir, *info, other, [](const row_record&) { return caf::error{}; });
  EXPECT_TRUE(is(err, errc::dimension_mismatch)) << render(err);
}

TEST_F(embedding_part_test, StoresExportToAndImportFromStreams) {
  auto store = trained();
  std::stringstream stream;
  ASSERT_FALSE(store->export_to(stream, "items"));
  auto cfg = part_config();
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
  auto fresh = make_store(part_config());
  auto cut_err = (*fresh)->import_from(cut);
  EXPECT_TRUE(is(cut_err, errc::corrupt_file)) << render(cut_err);
}

} // namespace
} // namespace darcy::stores
