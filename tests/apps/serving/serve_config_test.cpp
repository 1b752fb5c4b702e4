#include "apps/serving/serve_config.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::serving {
namespace {

TEST(serve_config, a_full_file_gives_tokens_rules_and_limits) {
  auto c = parse_serve_config(R"(
[tokens]
"t-a" = "alice"
[http]
default_deadline_ms = 200
max_body_bytes = 1000
[defaults]
query = ["*"]
manage = []
[models.songs]
query = ["alice"]
[[models.songs.quotas]]
principal = "alice"
app = "batch"
rate = 5.0
burst = 10.0
)",
                              "serve.toml");
  ASSERT_TRUE(c) << render(c.error());
  EXPECT_EQ(c->tokens.at("t-a"), "alice");
  EXPECT_EQ(c->default_deadline_ms, 200u);
  EXPECT_EQ(c->max_body_bytes, 1000u);
  auto& songs = c->rules_of("songs");
  EXPECT_EQ(songs.acl.query, std::vector<std::string>{"alice"});
  EXPECT_TRUE(songs.acl.manage.empty()); // from [defaults]
  ASSERT_EQ(songs.quotas.size(), 1u);
  EXPECT_EQ(songs.quotas[0].app, "batch");
  EXPECT_EQ(songs.quotas[0].rate, 5.0);
  auto& other = c->rules_of("other");
  EXPECT_EQ(other.acl.query, std::vector<std::string>{"*"});
}

TEST(serve_config, no_file_content_means_no_tokens_and_open_models) {
  auto c = parse_serve_config("", "empty.toml");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->tokens.empty());
  EXPECT_EQ(c->rules_of("x").acl.manage, std::vector<std::string>{"*"});
}

TEST(serve_config, bad_files_are_refused_naming_the_problem) {
  struct {
    const char* text;
    const char* mentions;
  } cases[] = {
    {"[tokens\n", "serve.toml"},
    {"[tokens]\n\"t\" = 3\n", "tokens"},
    {"[http]\ndefault_deadline_ms = 0\n", "http"},
    {"[models.m]\nquery = \"alice\"\n", "models.m.query"},
    {"[models.m]\nquery = [1]\n", "models.m.query"},
    {"[models.m]\nwho = [\"a\"]\n", "unknown key models.m.who"},
    {"[[models.m.quotas]]\nrate = 0.0\n", "rate must be above 0"},
    {"[limits]\n", "unknown table [limits]"},
  };
  for (auto& c : cases) {
    auto r = parse_serve_config(c.text, "serve.toml");
    ASSERT_FALSE(r) << c.text;
    EXPECT_TRUE(is(r.error(), errc::invalid_config)) << c.text;
    EXPECT_NE(render(r.error()).find(c.mentions), std::string::npos)
      << c.text << ": " << render(r.error());
  }
}

} // namespace
} // namespace darcy::serving
