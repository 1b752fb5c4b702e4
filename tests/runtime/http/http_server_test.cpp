// runtime/http_server: which client addresses count as loopback (serving lets only those
// manage models when no bearer token is configured).
#include "runtime/http/http_server.hpp"

#include <gtest/gtest.h>

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

} // namespace
} // namespace darcy::runtime
