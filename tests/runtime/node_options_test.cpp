#include "runtime/node_options.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::runtime {
namespace {

std::string write_temp(const std::string& name, const std::string& content) {
  auto path = std::filesystem::temp_directory_path() /
              ("darcy_node_options_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream{path} << content;
  return path.string();
}

TEST(node_options, ReadsEveryKeyFromToml) {
  auto path = write_temp("full.toml", R"([node]
name = "b"
listen = "127.0.0.1:7001"
advertise = "node-b.darcy"
join = "127.0.0.1:7000"
threads = 3
chaos = true
http = "127.0.0.1:9100"
[cluster]
heartbeat_interval_ms = 100
heartbeat_timeout_ms = 900
connect_timeout_ms = 1500
)");
  node_options opts;
  ASSERT_FALSE(load_node_config(path, opts));
  EXPECT_EQ(opts.name, "b");
  EXPECT_EQ(opts.listen, (host_port{"127.0.0.1", 7001}));
  EXPECT_EQ(opts.advertise, "node-b.darcy");
  ASSERT_TRUE(opts.join);
  EXPECT_EQ(*opts.join, (host_port{"127.0.0.1", 7000}));
  EXPECT_EQ(opts.threads, 3u);
  EXPECT_TRUE(opts.chaos);
  ASSERT_TRUE(opts.http);
  EXPECT_EQ(*opts.http, (host_port{"127.0.0.1", 9100}));
  EXPECT_EQ(opts.heartbeat_interval.count(), 100);
  EXPECT_EQ(opts.heartbeat_timeout.count(), 900);
  EXPECT_EQ(opts.connect_timeout.count(), 1500);
  EXPECT_FALSE(validate(opts));
}

TEST(node_options, RejectsBadFilesWithFileLineAndReason) {
  struct row {
    const char* name;
    const char* content;
    const char* expected;
  } rows[] = {
    {"syntax", "[node\nname = 1\n", "syntax.toml:1:"},
    {"unknown_key", "[node]\nnmae = \"x\"\n", "unknown key 'node.nmae'"},
    {"unknown_table", "[nodes]\n", "unknown key 'nodes'"},
    {"wrong_type", "[node]\nname = 3\n", "'name' must be a string"},
    {"bad_endpoint", "[node]\nlisten = \"nowhere\"\n", "is not HOST:PORT"},
    {"negative", "[cluster]\nheartbeat_timeout_ms = -5\n", "must be a positive integer"},
    {"not_a_bool", "[node]\nchaos = \"yes\"\n", "'chaos' must be true or false"},
    {"bad_http", "[node]\nhttp = \"sometimes\"\n", "give HOST:PORT or off"},
    {"http_not_string", "[node]\nhttp = 9100\n", "'http' must be a string"},
  };
  for (auto& r : rows) {
    auto path = write_temp(std::string{r.name} + ".toml", r.content);
    node_options opts;
    auto err = load_node_config(path, opts);
    ASSERT_TRUE(err) << r.name;
    EXPECT_TRUE(is(err, errc::invalid_config)) << r.name;
    EXPECT_NE(render(err).find(r.expected), std::string::npos) << render(err);
  }
}

TEST(node_options, HttpAddressIsHostPortOrOffAndServedByDefault) {
  EXPECT_EQ(node_options{}.http, (std::optional<host_port>{host_port{"", 0}}));
  auto off = parse_http_address("off");
  ASSERT_TRUE(off);
  EXPECT_FALSE(*off);
  auto fixed = parse_http_address("0.0.0.0:9100");
  ASSERT_TRUE(fixed);
  EXPECT_EQ(*fixed, (std::optional<host_port>{host_port{"0.0.0.0", 9100}}));
  auto bad = parse_http_address("9100");
  ASSERT_FALSE(bad);
  EXPECT_TRUE(is(bad.error(), errc::invalid_argument)) << render(bad.error());
}

TEST(node_options, MissingFileIsAnError) {
  node_options opts;
  auto err = load_node_config("/nonexistent/darcy.toml", opts);
  EXPECT_TRUE(is(err, errc::invalid_config)) << render(err);
}

TEST(node_options, ValidateRequiresANameSaneTimeoutsAndAnAdvertisedHostOnEveryInterface) {
  node_options opts;
  EXPECT_TRUE(is(validate(opts), errc::invalid_config));
  opts.name = "a";
  EXPECT_FALSE(validate(opts));
  opts.heartbeat_timeout = opts.heartbeat_interval;
  EXPECT_TRUE(is(validate(opts), errc::invalid_config));
  opts = node_options{};
  opts.name = "a";
  for (auto host : {"0.0.0.0", "::"}) {
    opts.listen.host = host;
    opts.advertise.clear();
    EXPECT_TRUE(is(validate(opts), errc::invalid_config)) << host;
    opts.advertise = "a.darcy.default.svc";
    EXPECT_FALSE(validate(opts)) << host;
  }
}

} // namespace
} // namespace darcy::runtime
