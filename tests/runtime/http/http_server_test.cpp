// runtime/http_server: which client addresses count as loopback (serving lets only those
// manage models when no bearer token is configured), the body limit of each target, and that
// its threads hold no actor system a handler used.
#include "runtime/http/http_server.hpp"

#include <memory>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "runtime/http/http_client.hpp"

namespace darcy::runtime {
namespace {

TEST(http_server, only_loopback_addresses_of_either_family_count_as_loopback) {
  struct {
    const char* address;
    bool loopback;
  } cases[] = {
    {"127.0.0.1", true},
    {"127.255.0.9", true},
    {"::1", true},
    {"::ffff:127.0.0.1", true},
    {"10.0.0.2", false},
    {"192.168.1.7", false},
    {"0.0.0.0", false},
    {"::", false},
    {"::ffff:10.0.0.2", false},
    {"fe80::1", false},
    {"", false},
    {"localhost", false},
    {"127.0.0.1:80", false},
    {"not an address", false},
  };
  for (auto& c : cases)
    EXPECT_EQ(is_loopback_address(c.address), c.loopback) << c.address;
}

TEST(http_server, a_large_body_target_takes_bodies_past_the_limit_that_others_get_413_for) {
  http_server_options o{.listen = {"127.0.0.1", 0}, .threads = 1, .max_body_bytes = 100};
  o.large_body = [](std::string_view target) { return target.ends_with(":sync"); };
  o.max_large_body_bytes = 1000;
  auto server = http_server::start(o, [](http_request req, http_responder respond) {
    respond({200, std::to_string(req.body.size())});
  });
  ASSERT_TRUE(server);
  struct {
    const char* target;
    size_t bytes;
    unsigned status;
  } cases[] = {
    {"/v1/models/m:predict", 100, 200}, {"/v1/models/m:predict", 101, 413},
    {"/v1/models/m:sync", 101, 200},    {"/v1/models/m:sync", 1000, 200},
    {"/v1/models/m:sync", 1001, 413},   {"/v1/models/m:sync/x", 101, 413},
  };
  for (auto& c : cases) {
    auto answer = http_exchange((*server)->port(),
                                http_request_text("POST", c.target, "", std::string(c.bytes, 'x')));
    EXPECT_EQ(http_status(answer), c.status) << c.target << " " << c.bytes;
    if (c.status == 200) {
      EXPECT_EQ(http_body(answer), std::to_string(c.bytes));
    }
  }
}

TEST(http_server, an_actor_system_a_handler_used_can_be_destroyed_while_the_server_idles) {
  caf::actor_system_config cfg;
  auto sys = std::make_unique<caf::actor_system>(cfg);
  sys->await_actors_before_shutdown(false);
  http_server_options o{.listen = {"127.0.0.1", 0}, .threads = 1};
  auto server = http_server::start(o, [&sys](http_request, http_responder respond) {
    caf::scoped_actor self{*sys}; // as a model's lookup does
    respond({200, "used"});
  });
  ASSERT_TRUE(server);
  auto answer = http_exchange((*server)->port(), http_request_text("GET", "/", "", ""));
  EXPECT_EQ(http_status(answer), 200u);
  // Had the server's thread kept the system's logger, this would wait for its next request.
  sys.reset();
  EXPECT_FALSE(sys);
}

} // namespace
} // namespace darcy::runtime
