#include "runtime/cluster/cluster_file.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::runtime {
namespace {

TEST(cluster_file, round_trips_and_resolves_a_seed_from_an_address_a_file_or_its_directory) {
  test::temp_dir dir{"cluster_file"};
  cluster_file c;
  c.nodes = {{"node-0", {"127.0.0.1", 7400}, 11, "/tmp/node-0.log"},
             {"node-1", {"127.0.0.1", 7401}, 12, "/tmp/node-1.log"}};
  c.secret_file = "/etc/darcy/secret";
  auto path = dir.path() + "/" + cluster_file_name;
  ASSERT_FALSE(write_cluster_file(path, c));
  auto back = read_cluster_file(path);
  ASSERT_TRUE(back) << render(back.error());
  ASSERT_EQ(back->nodes.size(), 2u);
  EXPECT_EQ(back->nodes[1].name, "node-1");
  EXPECT_EQ(back->nodes[1].address, (host_port{"127.0.0.1", 7401}));
  EXPECT_EQ(back->nodes[1].pid, 12);
  EXPECT_EQ(back->secret_file, c.secret_file);

  struct {
    const char* what;
    std::string text;
    host_port expected;
  } good[] = {
    {"an address", "10.0.0.1:7000", {"10.0.0.1", 7000}},
    {"a cluster file", path, {"127.0.0.1", 7400}},
    {"its directory", dir.path(), {"127.0.0.1", 7400}},
  };
  for (auto& g : good) {
    auto seed = resolve_seed(g.text);
    ASSERT_TRUE(seed) << g.what << ": " << render(seed.error());
    EXPECT_EQ(*seed, g.expected) << g.what;
  }

  auto garbage = dir.path() + "/garbage.json";
  std::ofstream{garbage} << "{\"nodes\": [{\"name\": \"x\"}]}";
  auto empty = dir.path() + "/empty.json";
  std::ofstream{empty} << "{\"nodes\": []}";
  test::temp_dir no_file{"cluster_file_none"};
  struct {
    const char* what;
    std::string text;
    errc expected;
  } bad[] = {
    {"neither an address nor a path", "nowhere", errc::invalid_argument},
    {"a node without an address", garbage, errc::corrupt_file},
    {"no node", empty, errc::corrupt_file},
    {"a directory without a cluster file", no_file.path(), errc::not_found},
  };
  for (auto& b : bad) {
    auto seed = resolve_seed(b.text);
    ASSERT_FALSE(seed) << b.what;
    EXPECT_TRUE(is(seed.error(), b.expected)) << b.what << ": " << render(seed.error());
  }
}

} // namespace
} // namespace darcy::runtime
