#include "runtime/host_port.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::runtime {
namespace {

TEST(host_port, ParsesValidEndpointsAndRejectsInvalidOnes) {
  struct row {
    const char* text;
    bool ok;
    host_port expected;
  } rows[] = {
    {"127.0.0.1:7000", true, {"127.0.0.1", 7000}},
    {"localhost:0", true, {"localhost", 0}},
    {"[::1]:65535", true, {"::1", 65535}},
    {"host:65536", false, {}},
    {"host:", false, {}},
    {":80", false, {}},
    {"host", false, {}},
    {"host:80x", false, {}},
    {"::1:80", false, {}},
    {"", false, {}},
  };
  for (auto& r : rows) {
    auto parsed = parse_host_port(r.text);
    ASSERT_EQ(static_cast<bool>(parsed), r.ok) << r.text;
    if (r.ok)
      EXPECT_EQ(*parsed, r.expected) << r.text;
    else
      EXPECT_TRUE(is(error_of(parsed), errc::invalid_argument)) << r.text;
  }
}

TEST(host_port, PrintsBackWhatItParsed) {
  for (auto text : {"127.0.0.1:7000", "[::1]:80", "example.org:1"})
    EXPECT_EQ(to_string(*parse_host_port(text)), text);
}

} // namespace
} // namespace darcy::runtime
