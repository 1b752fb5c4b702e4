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

TEST(serve_config, without_tokens_only_loopback_clients_may_manage_models) {
  auto open = parse_serve_config("", "empty.toml");
  auto with_tokens = parse_serve_config("[tokens]\n\"t\" = \"alice\"\n", "t.toml");
  ASSERT_TRUE(open && with_tokens);
  struct {
    const char* peer;
    bool loopback;
  } cases[] = {
    {"127.0.0.1", true}, {"::1", true}, {"10.0.0.2", false}, {"", false}, {"localhost", false},
  };
  for (auto& c : cases) {
    auto refused = may_manage_from(*open, c.peer);
    EXPECT_EQ(!refused, c.loopback) << c.peer;
    if (refused) {
      EXPECT_TRUE(is(refused, errc::permission_denied)) << c.peer;
      EXPECT_NE(render(refused).find("[tokens]"), std::string::npos) << render(refused);
    }
    EXPECT_FALSE(may_manage_from(*with_tokens, c.peer)) << c.peer; // the ACL decides then
  }
  EXPECT_NE(manage_policy_line(*open).find("loopback only"), std::string::npos);
  EXPECT_NE(manage_policy_line(*with_tokens).find("manage list"), std::string::npos);
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
