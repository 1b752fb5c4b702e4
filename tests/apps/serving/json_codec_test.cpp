#include "apps/serving/json_codec.hpp"

#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "messages/error.hpp"

namespace darcy::serving {
namespace {

TEST(json_codec, topk_bodies_parse_into_requests) {
  serve_config config;
  auto user =
    parse_topk_body(R"({"user": 42, "k": 3, "deadline_ms": 250, "allow_partial": true})", config);
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

  auto both = parse_topk_body(R"({"items": ["a"], "features": ["age:30", 7]})", config);
  ASSERT_TRUE(both) << render(both.error());
  EXPECT_EQ(both->request.kind, query_kind::items);
  EXPECT_EQ(both->request.items, (std::vector<std::string>{"a"}));
  EXPECT_EQ(both->request.features, (std::vector<std::string>{"age:30", "7"}));

  auto features = parse_topk_body(R"({"features": ["country:fr"]})", config);
  ASSERT_TRUE(features) << render(features.error());
  EXPECT_EQ(features->request.kind, query_kind::items);
  EXPECT_TRUE(features->request.items.empty());
  EXPECT_EQ(features->request.features, (std::vector<std::string>{"country:fr"}));

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
    {R"({"features": ["a"], "values": [1]})", "values go with items"},
    {R"({"features": []})", "non-empty"},
    {R"({"features": [[1]]})", "each feature"},
    {R"({"user": 1, "features": ["a"]})", "exactly one"},
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

TEST(json_codec, item_bodies_parse_into_new_items) {
  auto items = parse_items_body(
    R"({"items": [{"name": "song", "features": ["rock", 7], "users": ["u1", "u2"],
                   "values": [2, 0.5]}, {"name": 12, "users": ["u3"]}]})");
  ASSERT_TRUE(items) << render(items.error());
  ASSERT_EQ(items->size(), 2u);
  auto& song = (*items)[0];
  EXPECT_EQ(song.name, "song");
  EXPECT_EQ(song.features, (std::vector<std::string>{"rock", "7"}));
  EXPECT_EQ(song.users, (std::vector<std::string>{"u1", "u2"}));
  EXPECT_EQ(song.values, (std::vector<float>{2, 0.5f}));
  EXPECT_EQ((*items)[1].name, "12");
  EXPECT_TRUE((*items)[1].features.empty());
  add_items_response r{"3", {600, 601}, {0, 1}};
  auto j = nlohmann::json::parse(items_json("songs", *items, r));
  EXPECT_EQ(j["version"], "3");
  EXPECT_EQ(j["items"][1]["name"], "12");
  EXPECT_EQ(j["items"][1]["id"], 601);
  EXPECT_EQ(j["items"][1]["shard"], 1);
}

TEST(json_codec, bad_item_bodies_are_refused_naming_the_problem) {
  struct {
    const char* body;
    const char* mentions;
  } cases[] = {
    {"{", "not valid JSON"},
    {"{}", "non-empty array of new items"},
    {R"({"items": []})", "non-empty array of new items"},
    {R"({"items": [{"name": "a"}], "k": 3})", "non-empty array of new items"},
    {R"({"items": ["a"]})", "must be an object"},
    {R"({"items": [{"features": ["rock"]}]})", "needs a name"},
    {R"({"items": [{"name": "a", "features": []}]})", "features must be a non-empty array"},
    {R"({"items": [{"name": "a", "users": [null]}]})", "each user"},
    {R"({"items": [{"name": "a", "features": ["x"], "values": [1]}]})", "values go with users"},
    {R"({"items": [{"name": "a", "colour": "red"}]})", "unknown field 'colour'"},
  };
  for (auto& c : cases) {
    auto r = parse_items_body(c.body);
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

TEST(json_codec, a_version_that_is_not_a_folder_name_is_refused_naming_no_path) {
  for (auto version : {"/etc", "../../../etc", "..", ".", "3/../../x", "a\\b"}) {
    auto body = nlohmann::json{{"version", version}}.dump();
    auto parsed = parse_load_body(body);
    ASSERT_FALSE(parsed) << version;
    EXPECT_TRUE(is(parsed.error(), errc::invalid_argument)) << version;
    EXPECT_EQ(render(parsed.error()).find("etc"), std::string::npos) << render(parsed.error());
  }
}

TEST(json_codec, answers_render_as_json) {
  topk_response r;
  r.version = "2";
  r.ids = {5, 9};
  r.names = {"five", "nine \"quoted\""};
  r.scores = {2.5f, 1.0f};
  r.partial = true;
  r.missing_shards = {1};
  EXPECT_EQ(
    topk_json("songs", r, "t-1"),
    R"({"items":[{"id":5,"name":"five","score":2.5},{"id":9,"name":"nine \"quoted\"","score":1.0}],"missing_shards":[1],"model":"songs","partial":true,"trace_id":"t-1","version":"2"})");
  EXPECT_EQ(manage_json("songs", "3"), R"({"model":"songs","version":"3"})");
  EXPECT_EQ(manage_json("songs", ""), R"({"model":"songs","unloaded":true})");
}

TEST(json_codec, answers_parse_back_to_their_names_and_scores) {
  struct row {
    std::string name;
    float score;
    std::string name_read; // what a JSON reader gets back
  };
  std::vector<row> cases = {
    {"plain", 0.1f, "plain"},
    {"back\\slash", -3.0f, "back\\slash"},
    {"tab\tand\nline", 1e-30f, "tab\tand\nline"},
    {"caf\xc3\xa9", 1e20f, "caf\xc3\xa9"},
    {"bad \xff utf-8", 123456.75f, "bad \xef\xbf\xbd utf-8"},
    {"", 0.0f, ""},
  };
  topk_response r;
  r.version = "v\"1";
  for (size_t i = 0; i < cases.size(); ++i) {
    r.ids.push_back(uint64_t{1} << (10 * i));
    r.names.push_back(cases[i].name);
    r.scores.push_back(cases[i].score);
  }
  auto j = nlohmann::json::parse(topk_json("m\\x", r, "trace\x01"));
  ASSERT_EQ(j["items"].size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(j["items"][i]["id"].get<uint64_t>(), r.ids[i]) << i;
    EXPECT_EQ(j["items"][i]["name"].get<std::string>(), cases[i].name_read) << i;
    EXPECT_EQ(j["items"][i]["score"].get<float>(), cases[i].score) << i;
  }
  EXPECT_EQ(j["model"], "m\\x");
  EXPECT_EQ(j["trace_id"], "trace\x01");
  EXPECT_EQ(j["version"], "v\"1");
  EXPECT_EQ(j["partial"], false);
  EXPECT_TRUE(j["missing_shards"].empty());
}

TEST(json_codec, scores_that_are_not_finite_render_as_null) {
  topk_response r;
  r.ids = {1, 2};
  r.names = {"a", "b"};
  r.scores = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()};
  auto j = nlohmann::json::parse(topk_json("m", r, "t"));
  EXPECT_TRUE(j["items"][0]["score"].is_null());
  EXPECT_TRUE(j["items"][1]["score"].is_null());
}

} // namespace
} // namespace darcy::serving
