// The HTTP API end to end in one process: a root over a small export, the front end and the
// Beast server on a free port, talked to over TCP with raw requests.
#include "apps/serving/serving_front.hpp"

#include <atomic>
#include <future>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "actors/actor_types.hpp"
#include "actors/serving/serving_root.hpp"
#include "runtime/cluster/remote_run.hpp"
#include "stores/serving/serving_export.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/random_matrix.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::serving {
namespace {

constexpr uint32_t dim = 4;

const char* config_text = R"(
[tokens]
"tok-alice" = "alice"
"tok-bob" = "bob"
"tok-mallory" = "mallory"
[http]
max_body_bytes = 4096
[models.m]
query = ["alice", "bob"]
manage = ["alice"]
[[models.m.quotas]]
principal = "bob"
rate = 0.001
burst = 1.0
)";

/// A 2-shard export of 200 items and 10 users, drawn from `seed`.
stores::export_input small_export(uint64_t seed) {
  stores::export_input in;
  in.config.shards = 2;
  in.config.lambda = 0.1;
  in.config.sigma = 0.5;
  in.config.alpha = 1;
  in.items = test::gaussian_matrix(200, dim, seed);
  in.users = test::gaussian_matrix(10, dim, seed + 1);
  in.index = {.lists = 4, .seed = 3};
  return in;
}

struct front_config : test::test_config {
  front_config() { actors::register_actor_types(*this); }
};

using test::http_exchange;
using test::http_status;
std::string request(const std::string& method, const std::string& target, const std::string& token,
                    const std::string& body = {}) {
  return test::http_request_text(method, target, token, body);
}

class http_api_test : public ::testing::Test {
protected:
  http_api_test() : sys{cfg}, tmp{"http_api"} { sys.await_actors_before_shutdown(false); }

  void SetUp() override {
    ASSERT_TRUE(stores::write_export(tmp.path() + "/m", small_export(1), 2));
    auto config = parse_serve_config(config_text, "test.toml");
    ASSERT_TRUE(config) << render(config.error());
    actors::serving_root_config rc;
    rc.model = "m";
    rc.model_dir = tmp.path() + "/m";
    rc.access = config->rules_of("m");
    rc.load_newest = false;
    root = sys.spawn(actors::serving_root, rc);
    guard = std::make_unique<test::stop_on_exit>(sys, caf::actor_cast<caf::actor>(root));
    request_context alice;
    alice.principal = "alice";
    auto loaded = runtime::remote_run<std::string>(sys, root, request_context{}, "root",
                                                   load_atom::value, alice, std::string{});
    ASSERT_TRUE(loaded) << render(loaded.error());
    front = std::make_unique<serving_front>(sys, *config,
                                            std::map<std::string, serving_root_actor>{{"m", root}});
    auto s = http_server::start(
      {.listen = {"127.0.0.1", 0}, .threads = 2, .max_body_bytes = config->max_body_bytes},
      [this](http_request req, http_responder respond) {
        front->handle(std::move(req), std::move(respond));
      });
    ASSERT_TRUE(s) << render(s.error());
    server = std::move(*s);
  }

  void TearDown() override {
    if (server)
      server->stop();
  }

  unsigned call(const std::string& raw) { return http_status(http_exchange(server->port(), raw)); }

  front_config cfg;
  caf::actor_system sys;
  test::temp_dir tmp;
  serving_root_actor root;
  std::unique_ptr<test::stop_on_exit> guard;
  std::unique_ptr<serving_front> front;
  std::unique_ptr<http_server> server;
};

TEST_F(http_api_test, every_request_gets_its_status) {
  std::string topk = "/v1/models/m:topk";
  std::string good = R"({"vector": [1, 0.5, -1, 2], "k": 5})";
  struct {
    const char* name;
    std::string raw;
    unsigned expected;
  } cases[] = {
    {"vector query", request("POST", topk, "tok-alice", good), 200},
    {"known user by row", request("POST", topk, "tok-alice", R"({"user": 3})"), 200},
    {"new user by items",
     request("POST", topk, "tok-alice", R"({"items": [1, "7"], "values": [1, 2]})"), 200},
    {"no token", request("POST", topk, "", good), 401},
    {"unknown token", request("POST", topk, "tok-eve", good), 401},
    {"not a bearer token",
     "POST " + topk + " HTTP/1.1\r\nAuthorization: Basic YWxpY2U=\r\nContent-Length: " +
       std::to_string(good.size()) + "\r\n\r\n" + good,
     401},
    {"principal not in the ACL", request("POST", topk, "tok-mallory", good), 403},
    {"manage without the right", request("POST", "/v1/models/m:load", "tok-bob", "{}"), 403},
    {"unknown model", request("POST", "/v1/models/nope:topk", "tok-alice", good), 404},
    {"unknown path", request("GET", "/v2/things", "tok-alice"), 404},
    {"unknown verb", request("POST", "/v1/models/m:explode", "tok-alice", good), 404},
    {"wrong method on topk", request("GET", topk, "tok-alice"), 405},
    {"wrong method on metrics", request("POST", "/metrics", "", "{}"), 405},
    {"malformed JSON", request("POST", topk, "tok-alice", R"({"vector": [1, 2)"), 400},
    {"not an object", request("POST", topk, "tok-alice", "[1, 2]"), 400},
    {"unknown field", request("POST", topk, "tok-alice", R"({"vector": [1,2,3,4], "kk": 3})"), 400},
    {"two queries", request("POST", topk, "tok-alice", R"({"vector": [1,2,3,4], "user": 1})"), 400},
    {"k of 0", request("POST", topk, "tok-alice", R"({"vector": [1,2,3,4], "k": 0})"), 400},
    {"k as text", request("POST", topk, "tok-alice", R"({"vector": [1,2,3,4], "k": "5"})"), 400},
    {"wrong dimension", request("POST", topk, "tok-alice", R"({"vector": [1,2,3]})"), 400},
    {"overflowing value", request("POST", topk, "tok-alice", R"({"vector": [1e300,2,3,4]})"), 400},
    {"unknown user", request("POST", topk, "tok-alice", R"({"user": 99})"), 404},
    {"body over the limit", request("POST", topk, "tok-alice", std::string(5000, ' ')), 413},
    {"model status", request("GET", "/v1/models/m", "tok-alice"), 200},
    {"model list", request("GET", "/v1/models", "tok-alice"), 200},
    {"load the loaded version",
     request("POST", "/v1/models/m:load", "tok-alice", R"({"version": "1"})"), 200},
    {"load an unknown version",
     request("POST", "/v1/models/m:load", "tok-alice", R"({"version": "9"})"), 404},
    {"load a path", request("POST", "/v1/models/m:load", "tok-alice", R"({"version": "/etc"})"),
     400},
    {"load a path up",
     request("POST", "/v1/models/m:load", "tok-alice", R"({"version": "../../../etc"})"), 400},
    {"metrics", request("GET", "/metrics", ""), 200},
    {"add an item from its users",
     request("POST", "/v1/models/m:items", "tok-alice",
             R"({"items": [{"name": "n", "users": [3]}]})"),
     200},
    {"add it again",
     request("POST", "/v1/models/m:items", "tok-alice",
             R"({"items": [{"name": "n", "users": [4]}]})"),
     400},
    {"add of which nothing is known",
     request("POST", "/v1/models/m:items", "tok-alice",
             R"({"items": [{"name": "o", "users": [99]}]})"),
     404},
    {"add without the right",
     request("POST", "/v1/models/m:items", "tok-bob",
             R"({"items": [{"name": "p", "users": [3]}]})"),
     403},
    {"wrong method on items", request("GET", "/v1/models/m:items", "tok-alice"), 405},
  };
  for (auto& c : cases)
    EXPECT_EQ(call(c.raw), c.expected) << c.name;
}

TEST_F(http_api_test, refusals_of_a_version_name_no_path_of_the_server) {
  for (auto body : {R"({"version": "/etc"})", R"({"version": "../../../etc"})",
                    R"({"version": "1/../../m"})", R"({"version": "9"})"}) {
    auto answer =
      http_exchange(server->port(), request("POST", "/v1/models/m:load", "tok-alice", body));
    EXPECT_NE(http_status(answer), 200u) << answer;
    EXPECT_EQ(answer.find("/etc"), std::string::npos) << answer;
    EXPECT_EQ(answer.find(tmp.path()), std::string::npos) << answer;
    EXPECT_EQ(answer.find("MANIFEST"), std::string::npos) << answer;
  }
}

TEST_F(http_api_test, quota_denials_are_429_and_metrics_count_every_code) {
  std::string body = R"({"vector": [1, 0.5, -1, 2]})";
  EXPECT_EQ(call(request("POST", "/v1/models/m:topk", "tok-bob", body)), 200u);
  EXPECT_EQ(call(request("POST", "/v1/models/m:topk", "tok-bob", body)), 429u);
  auto answer =
    http_exchange(server->port(), request("POST", "/v1/models/m:topk", "tok-alice", body));
  ASSERT_EQ(http_status(answer), 200u);
  EXPECT_NE(answer.find("\"partial\":false"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"version\":\"1\""), std::string::npos) << answer;
  auto metrics = http_exchange(server->port(), request("GET", "/metrics", ""));
  for (auto line :
       {"darcy_http_requests_total{model=\"m\",route=\"topk\",code=\"200\"} 2",
        "darcy_http_requests_total{model=\"m\",route=\"topk\",code=\"429\"} 1",
        "darcy_principal_denied_total{model=\"m\",principal=\"bob\",cause=\"quota\"} 1",
        "darcy_principal_rows_total{model=\"m\",principal=\"alice\"} 10",
        "darcy_shard_duration_seconds_count{model=\"m\",shard=\"1\"} 2",
        "darcy_http_request_duration_seconds_bucket{model=\"m\",route=\"topk\",le=\"+Inf\"} 3",
        "darcy_shard_up{model=\"m\",shard=\"0\"} 1"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;
}

/// A malformed request of one of several kinds, drawn from `rng`.
std::string malformed(std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto random_bytes = [&](size_t n, bool printable) {
    std::string s;
    for (size_t i = 0; i < n; ++i)
      s += printable ? static_cast<char>(33 + pick(94)) : static_cast<char>(pick(256));
    return s;
  };
  std::string body = R"({"vector": [1, 0.5, -1, 2], "k": 3})";
  auto valid = request("POST", "/v1/models/m:topk", "tok-alice", body);
  switch (pick(9)) {
    case 0: // cut inside the head
      return valid.substr(0, 1 + pick(valid.find("\r\n\r\n")));
    case 1: // a garbage request line
      return random_bytes(1 + pick(60), true) + "\r\n\r\n";
    case 2: // a header line without a colon
      return "POST /v1/models/m:topk HTTP/1.1\r\n" + random_bytes(1 + pick(30), true) + "\r\n\r\n";
    case 3: { // a bad Content-Length
      const char* lengths[] = {"abc", "-1", "99999999999999999999", "1 2", ""};
      return "POST /v1/models/m:topk HTTP/1.1\r\nContent-Length: " + std::string{lengths[pick(5)]} +
             "\r\n\r\n" + body;
    }
    case 4: // a body of random bytes
      return request("POST", "/v1/models/m:topk", "tok-alice", random_bytes(1 + pick(200), false));
    case 5: { // JSON with a field of the wrong type or range
      const char* bodies[] = {R"({"vector": "x"})",
                              R"({"vector": [1, "a", 2, 3]})",
                              R"({"user": -4})",
                              R"({"user": 1.5})",
                              R"({"items": []})",
                              R"({"items": [{}]})",
                              R"({"vector": [1,2,3,4], "k": -1})",
                              R"({"vector": [1,2,3,4], "deadline_ms": 0})",
                              R"({"vector": [1,2,3,4], "allow_partial": "yes"})",
                              R"({"vector": [1,2,3,4], "values": [1]})",
                              R"(null)",
                              R"("")",
                              R"({"vector": [1,2,3,4], "k": 100000})"};
      return request("POST", "/v1/models/m:topk", "tok-alice", bodies[pick(13)]);
    }
    case 6: // a body over the limit
      return request("POST", "/v1/models/m:topk", "tok-alice", std::string(4097 + pick(8000), '['));
    case 7: { // a method the route does not take
      const char* methods[] = {"PUT", "DELETE", "PATCH", "FOO", "GET"};
      return request(methods[pick(5)], "/v1/models/m:topk", "tok-alice", body);
    }
    default: // a path that does not exist
      return request("POST", "/v1/models/" + random_bytes(1 + pick(20), true) + "/x", "tok-alice",
                     body);
  }
}

TEST_F(http_api_test, a_hot_swap_under_an_http_client_loop_fails_no_request) {
  auto version = stores::write_export(tmp.path() + "/m", small_export(7), 2);
  ASSERT_TRUE(version) << render(version.error());
  ASSERT_EQ(*version, "2");
  std::string topk =
    request("POST", "/v1/models/m:topk", "tok-alice", R"({"vector": [1, 0.5, -1, 2]})");
  std::atomic<bool> stop{false};
  std::map<unsigned, size_t> codes;
  std::atomic<size_t> before_swap{0};
  std::thread client{[&] {
    while (!stop) {
      ++codes[http_status(http_exchange(server->port(), topk))];
      ++before_swap;
    }
  }};
  // The swap starts while the client is already asking.
  while (before_swap < 20)
    std::this_thread::yield();
  auto loaded = http_exchange(
    server->port(), request("POST", "/v1/models/m:load", "tok-alice", R"({"version": "2"})"));
  auto after = http_exchange(server->port(), topk);
  stop = true;
  client.join();
  EXPECT_EQ(http_status(loaded), 200u) << loaded;
  EXPECT_NE(after.find("\"version\":\"2\""), std::string::npos) << after;
  EXPECT_EQ(codes.size(), 1u);
  EXPECT_GT(codes[200], 20u) << "every request during the swap answered 200";
}

TEST_F(http_api_test, hundreds_of_malformed_requests_get_only_4xx_and_the_server_stays_up) {
  std::mt19937_64 rng{2026};
  std::map<unsigned, size_t> codes;
  for (int i = 0; i < 300; ++i) {
    auto raw = malformed(rng);
    auto code = call(raw);
    ++codes[code];
    EXPECT_TRUE(code >= 400 && code < 500) << "status " << code << " for:\n" << raw;
  }
  EXPECT_GE(codes.size(), 4u);
  EXPECT_EQ(call(request("POST", "/v1/models/m:topk", "tok-alice", R"({"vector": [1,2,3,4]})")),
            200u);
}

} // namespace
} // namespace darcy::serving

namespace darcy::serving {
namespace {

/// A root that takes every top-k request and never answers it: its promises stay open.
serving_root_actor::behavior_type silent_root(serving_root_actor::pointer self) {
  auto held = std::make_shared<std::vector<caf::typed_response_promise<topk_response>>>();
  return {
    [self, held](topk_atom, const topk_request&) -> caf::result<topk_response> {
      held->push_back(self->make_response_promise<topk_response>());
      return held->back();
    },
    [](add_atom, const add_items_request&) -> caf::result<add_items_response> {
      return make_error(errc::unavailable, "silent");
    },
    [](load_atom, const request_context&, const std::string&) -> caf::result<std::string> {
      return make_error(errc::unavailable, "silent");
    },
    [](unload_atom, const request_context&) -> caf::result<ok_atom> { return ok_atom::value; },
    [](status_atom) { return model_status{}; },
    [](const supervisor_event&) {},
    [](tick_atom, uint64_t) {},
  };
}

TEST(http_api, a_root_that_never_answers_gives_504_after_the_deadline_and_the_front_still_serves) {
  front_config cfg;
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);
  auto root = sys.spawn(silent_root);
  test::stop_on_exit guard{sys, caf::actor_cast<caf::actor>(root)};
  auto config = parse_serve_config("", "empty.toml");
  ASSERT_TRUE(config) << render(config.error());
  serving_front front{sys, *config, {{"m", root}}};
  auto server = http_server::start({.listen = {"127.0.0.1", 0}, .threads = 1},
                                   [&front](http_request req, http_responder respond) {
                                     front.handle(std::move(req), std::move(respond));
                                   });
  ASSERT_TRUE(server) << render(server.error());
  for (int i = 0; i < 2; ++i) {
    auto answer = http_exchange(
      (*server)->port(),
      request("POST", "/v1/models/m:topk", "", R"({"vector": [1, 2, 3, 4], "deadline_ms": 1})"));
    EXPECT_EQ(http_status(answer), 504u) << answer;
    EXPECT_NE(answer.find("\"error\""), std::string::npos) << answer;
  }
  auto status = http_exchange((*server)->port(), request("GET", "/v1/models/m", ""));
  EXPECT_EQ(http_status(status), 200u) << status;
  (*server)->stop();
}

} // namespace
} // namespace darcy::serving

namespace darcy::serving {
namespace {

/// front.handle(request) as it answers (the front answers on a CAF or HTTP thread).
http_response answer_of(serving_front& front, http_request request) {
  auto answered = std::make_shared<std::promise<http_response>>();
  auto future = answered->get_future();
  front.handle(std::move(request),
               [answered](http_response r) { answered->set_value(std::move(r)); });
  return future.get();
}

// With no bearer tokens, every client is "anonymous" and a model's manage list allows it by
// default: only the client's address keeps another host from loading or unloading models.
TEST(http_api, without_tokens_only_a_loopback_client_may_load_or_unload) {
  front_config cfg;
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);
  test::temp_dir tmp{"http_api_open"};
  ASSERT_TRUE(stores::write_export(tmp.path() + "/m", small_export(1), 2));
  actors::serving_root_config rc;
  rc.model = "m";
  rc.model_dir = tmp.path() + "/m";
  rc.load_newest = false; // the loopback client's load below is the first
  auto root = sys.spawn(actors::serving_root, rc);
  test::stop_on_exit guard{sys, caf::actor_cast<caf::actor>(root)};
  auto config = parse_serve_config("", "empty.toml");
  ASSERT_TRUE(config) << render(config.error());
  serving_front front{sys, *config, {{"m", root}}};
  auto call = [&](const std::string& verb, const std::string& peer) {
    http_request req;
    req.method = "POST";
    req.target = "/v1/models/m:" + verb;
    req.body = verb == "load" ? R"({"version": "1"})" : "";
    req.peer = peer;
    return answer_of(front, req);
  };
  struct {
    const char* verb;
    const char* peer;
    unsigned expected;
  } cases[] = {
    {"load", "10.0.0.2", 403},           {"unload", "10.0.0.2", 403}, {"unload", "", 403},
    {"load", "::ffff:192.168.1.9", 403}, {"load", "127.0.0.1", 200},  {"unload", "::1", 200},
    {"load", "::ffff:127.0.0.1", 200},
  };
  for (auto& c : cases) {
    auto r = call(c.verb, c.peer);
    EXPECT_EQ(r.status, c.expected) << c.verb << " from '" << c.peer << "': " << r.body;
    if (c.expected == 403) {
      EXPECT_NE(r.body.find("loopback only"), std::string::npos) << r.body;
    }
  }
  // Queries stay open to every address.
  http_request topk;
  topk.method = "POST";
  topk.target = "/v1/models/m:topk";
  topk.body = R"({"vector": [1, 0.5, -1, 2]})";
  topk.peer = "10.0.0.2";
  auto r = answer_of(front, topk);
  EXPECT_EQ(r.status, 200u) << r.body;
}

} // namespace
} // namespace darcy::serving
