// ops/torch/torch_export: a PyTorch export's spec is read whole or refused naming what is wrong,
// and an export written with a session's tables reads back with its module, spec and tables.
#include "ops/torch/torch_export.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops {
namespace {

const char* good_spec = R"({"format": "darcy.torch_export", "version": 1,
  "dense": [{"name": "x", "shape": [3]}],
  "slots": [{"module": "ebc", "pools": [
     {"feature": "user", "table": "users", "dim": 4, "pooling": "sum"},
     {"feature": "ad", "table": "ads", "dim": 2, "pooling": "mean"}]}],
  "output": []})";

TEST(torch_export, a_spec_reads_its_inputs_in_order) {
  auto spec = parse_torch_spec(good_spec);
  ASSERT_TRUE(spec) << render(spec.error());
  ASSERT_EQ(spec->dense.size(), 1u);
  EXPECT_EQ(spec->dense[0].name, "x");
  EXPECT_EQ(spec->dense[0].size(), 3u);
  ASSERT_EQ(spec->slots.size(), 1u);
  EXPECT_EQ(spec->slots[0].width(), 6u);
  EXPECT_FALSE(spec->slots[0].pools[0].mean);
  EXPECT_TRUE(spec->slots[0].pools[1].mean);
  EXPECT_TRUE(spec->output.empty());
}

TEST(torch_export, a_bad_spec_is_corrupt_naming_what_is_wrong) {
  struct {
    const char* what;
    std::string from, to;
    const char* says;
  } cases[] = {
    {"not JSON", "{", "{{", "not a darcy.torch_export spec"},
    {"another format", "darcy.torch_export", "other", "not a darcy.torch_export spec"},
    {"a later version", "\"version\": 1", "\"version\": 2", "version 2"},
    {"no slots", "\"slots\": [", "\"slots\": [], \"x\": [", "no dense inputs or no slots"},
    {"a zero dimension", "\"shape\": [3]", "\"shape\": [0]", "not a positive integer"},
    {"another pooling", "\"pooling\": \"mean\"", "\"pooling\": \"max\"", "pooling 'max'"},
    {"a name twice", "\"feature\": \"ad\"", "\"feature\": \"x\"", "the name x twice"},
    {"a pool without table", "\"table\": \"ads\", ", "", "without feature, table"},
  };
  for (auto& c : cases) {
    std::string text = good_spec;
    auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.what;
    text.replace(at, c.from.size(), c.to);
    auto spec = parse_torch_spec(text);
    ASSERT_FALSE(spec) << c.what;
    EXPECT_TRUE(is(spec.error(), errc::corrupt_file)) << c.what;
    EXPECT_NE(render(spec.error()).find(c.says), std::string::npos)
      << c.what << ": " << render(spec.error());
  }
}

TEST(torch_export, an_export_reads_back_its_module_spec_and_tables) {
  test::temp_dir temp{"torch_export"};
  auto s = session::open({});
  ASSERT_TRUE(s);
  de_config cfg;
  cfg.dim = 4;
  ASSERT_TRUE(dynamic_embedding_lookup(**s, {"7", "8"}, cfg, "users"));
  auto dir = temp.path() + "/ranker";
  EXPECT_FALSE(is_torch_export(dir));
  auto version = write_torch_export(**s, dir, "module bytes", good_spec, 2);
  ASSERT_TRUE(version) << render(version.error());
  EXPECT_EQ(*version, "1");
  EXPECT_TRUE(is_torch_export(dir));
  auto read = read_torch_export(dir);
  ASSERT_TRUE(read) << render(read.error());
  EXPECT_EQ(read->version, "1");
  EXPECT_EQ(read->module, "module bytes");
  EXPECT_EQ(read->spec.slots[0].pools[1].table, "ads");
  EXPECT_TRUE(std::filesystem::exists(read->embeddings + "/MANIFEST"));
  auto refused = write_torch_export(**s, dir, "module bytes", "{}", 2);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(is(refused.error(), errc::invalid_argument));
  EXPECT_EQ(read_torch_export(dir)->version, "1"); // nothing written
}

} // namespace
} // namespace darcy::ops
