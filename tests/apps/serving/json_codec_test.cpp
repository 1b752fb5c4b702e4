#include "apps/serving/json_codec.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::serving {
namespace {

TEST(json_codec, topk_bodies_parse_into_requests) {
  serve_config config;
  auto user = parse_topk_body(R"({"user": 42, "k": 3, "deadline_ms": 250, "allow_partial": true})",
                              config);
  ASSERT_TRUE(user) << render(user.error());
  EXPECT_EQ(user->request.kind, query_kind::user);
  EXPECT_EQ(user->request.user, "42");
  EXPECT_EQ(user->request.k, 3u);
  EXPECT_EQ(user->deadline_ms, 250u);
  EXPECT_TRUE(user->request.allow_partial);

  auto items = parse_topk_body(R"({"items": ["a", 7], "values": [2, 0.5]})", config);
  ASSERT_TRUE(items) << render(items.error());
  EXPECT_EQ(items->request.kind, query_kind::items);
  EXPECT_EQ(items->request.items, (std::vector<std::string>{"a", "7"}));
  EXPECT_EQ(items->request.values, (std::vector<float>{2, 0.5f}));
  EXPECT_EQ(items->request.k, 10u);
  EXPECT_EQ(items->deadline_ms, config.default_deadline_ms);
  EXPECT_FALSE(items->request.allow_partial);

  auto vector = parse_topk_body(R"({"vector": [1, -2.5]})", config);
  ASSERT_TRUE(vector) << render(vector.error());
  EXPECT_EQ(vector->request.vector, (std::vector<float>{1, -2.5f}));
}

TEST(json_codec, bad_topk_bodies_are_refused_naming_the_problem) {
  serve_config config;
  config.max_k = 100;
  config.max_deadline_ms = 5000;
  struct {
    const char* body;
    const char* mentions;
  } cases[] = {
    {"", "not valid JSON"},
    {"{\"user\": 1", "not valid JSON"},
    {"[]", "JSON object"},
    {"{}", "exactly one"},
    {R"({"user": 1, "vector": [1]})", "exactly one"},
    {R"({"user": -1})", "user must be"},
    {R"({"user": 1.5})", "user must be"},
    {R"({"items": []})", "non-empty"},
    {R"({"items": [true]})", "each item"},
    {R"({"vector": "1,2"})", "vector must be"},
    {R"({"vector": [1, null]})", "vector must be"},
    {R"({"vector": [1], "k": 0})", "k must be"},
    {R"({"vector": [1], "k": 101})", "k must be"},
    {R"({"vector": [1], "deadline_ms": 5001})", "deadline_ms must be"},
    {R"({"vector": [1], "allow_partial": 1})", "allow_partial"},
    {R"({"vector": [1], "values": [1]})", "values go with items"},
    {R"({"vector": [1], "colour": "red"})", "unknown field 'colour'"},
  };
  for (auto& c : cases) {
    auto r = parse_topk_body(c.body, config);
    ASSERT_FALSE(r) << c.body;
    EXPECT_TRUE(is(r.error(), errc::invalid_argument)) << c.body;
    EXPECT_NE(render(r.error()).find(c.mentions), std::string::npos)
      << c.body << ": " << render(r.error());
  }
}

TEST(json_codec, load_bodies_name_a_version_or_the_newest) {
  EXPECT_EQ(parse_load_body(""), caf::expected<std::string>{""});
  EXPECT_EQ(parse_load_body("{}"), caf::expected<std::string>{""});
  EXPECT_EQ(parse_load_body(R"({"version": "3"})"), caf::expected<std::string>{"3"});
  EXPECT_EQ(parse_load_body(R"({"version": 4})"), caf::expected<std::string>{"4"});
  EXPECT_FALSE(parse_load_body(R"({"v": 4})"));
  EXPECT_FALSE(parse_load_body("4"));
}

TEST(json_codec, answers_render_as_json) {
  topk_response r;
  r.version = "2";
  r.ids = {5, 9};
  r.names = {"five", "nine \"quoted\""};
  r.scores = {2.5f, 1.0f};
  r.partial = true;
  r.missing_shards = {1};
  EXPECT_EQ(topk_json("songs", r, "t-1"),
            R"({"items":[{"id":5,"name":"five","score":2.5},{"id":9,"name":"nine \"quoted\"","score":1.0}],"missing_shards":[1],"model":"songs","partial":true,"trace_id":"t-1","version":"2"})");
  EXPECT_EQ(manage_json("songs", "3"), R"({"model":"songs","version":"3"})");
  EXPECT_EQ(manage_json("songs", ""), R"({"model":"songs","unloaded":true})");
}

} // namespace
} // namespace darcy::serving
