// runtime/http_client: an exchange with the runtime's own HTTP server, a port nobody listens
// on, and the parsing of status lines and bodies.
#include "runtime/http/http_client.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "runtime/http/http_server.hpp"

namespace darcy::runtime {
namespace {

TEST(http_client, an_exchange_returns_the_status_and_the_body_the_server_answered) {
  http_request seen;
  auto server = http_server::start({}, [&seen](http_request req, http_responder respond) {
    seen = req;
    respond({201, R"({"ok":true})"});
  });
  ASSERT_TRUE(server) << render(server.error());
  auto answer =
    http_exchange((*server)->port(), http_request_text("POST", "/v1/x", "tok", R"({"a":1})"));
  EXPECT_EQ(http_status(answer), 201u) << answer;
  EXPECT_EQ(http_body(answer), R"({"ok":true})");
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.target, "/v1/x");
  EXPECT_EQ(seen.authorization, "Bearer tok");
  EXPECT_EQ(seen.body, R"({"a":1})");
  EXPECT_EQ(seen.peer, "127.0.0.1");
  (*server)->stop();
}

TEST(http_client, a_port_nobody_listens_on_gives_an_empty_answer) {
  auto server = http_server::start({}, [](http_request, http_responder respond) {
    respond({200, "{}"});
  });
  ASSERT_TRUE(server);
  auto port = (*server)->port();
  (*server)->stop();
  server->reset();
  auto answer = http_exchange(port, http_request_text("GET", "/", ""));
  EXPECT_EQ(answer, "");
  EXPECT_EQ(http_status(answer), 0u);
}

TEST(http_client, status_and_body_are_read_from_the_answer_or_are_empty) {
  struct row {
    std::string answer;
    unsigned status;
    std::string body;
  };
  for (auto& r : std::vector<row>{
         {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", 200, "{}"},
         {"HTTP/1.1 504 Gateway Timeout\r\n\r\n", 504, ""},
         {"HTTP/1.0 200 OK\r\n\r\nx", 0, "x"},
         {"HTTP/1.1 20", 0, ""},
         {"", 0, ""},
       }) {
    SCOPED_TRACE(r.answer);
    EXPECT_EQ(http_status(r.answer), r.status);
    EXPECT_EQ(http_body(r.answer), r.body);
  }
}

TEST(http_client, a_get_carries_no_body_headers_and_a_post_always_does) {
  EXPECT_EQ(http_request_text("GET", "/m", ""),
            "GET /m HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(http_request_text("POST", "/m", "", ""),
            "POST /m HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: "
            "application/json\r\nContent-Length: 0\r\n\r\n");
}

TEST(http_client, a_url_is_read_into_address_and_target_or_refused_by_name) {
  auto url = parse_http_url("http://127.0.0.1:8500/v1/models/ctr:sync");
  ASSERT_TRUE(url) << render(url.error());
  EXPECT_EQ(url->address.host, "127.0.0.1");
  EXPECT_EQ(url->address.port, 8500);
  EXPECT_EQ(url->target, "/v1/models/ctr:sync");
  for (auto bad : {"https://127.0.0.1:8500/v1", "http://127.0.0.1:8500", "http://localhost/v1",
                   "127.0.0.1:8500/v1", "http://:8500/v1", ""}) {
    auto refused = parse_http_url(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_TRUE(is(refused.error(), errc::invalid_argument)) << bad;
    EXPECT_NE(render(refused.error()).find("is not http://HOST:PORT/PATH"), std::string::npos);
  }
}

} // namespace
} // namespace darcy::runtime
