#include "actors/serving/access_policy.hpp"

#include <gtest/gtest.h>

#include "messages/error.hpp"

namespace darcy::actors {
namespace {

request_context as(std::string principal, std::string app = "web") {
  request_context ctx;
  ctx.principal = std::move(principal);
  ctx.app = std::move(app);
  return ctx;
}

access_rules rules() {
  access_rules r;
  r.acl.query = {"alice", "bob"};
  r.acl.manage = {"alice"};
  r.quotas = {{"bob", "batch", 1.0, 2.0}, {"bob", "*", 10.0, 1.0}};
  return r;
}

TEST(access_policy, acl_cases_admit_or_deny_with_their_own_error) {
  struct {
    std::string principal;
    access_action action;
    errc expected; // errc{} for admitted
  } cases[] = {
    {"alice", access_action::query, errc{}},
    {"alice", access_action::manage, errc{}},
    {"bob", access_action::query, errc{}},
    {"bob", access_action::manage, errc::access_denied},
    {"mallory", access_action::query, errc::access_denied},
    {"mallory", access_action::manage, errc::access_denied},
    {"", access_action::query, errc::access_denied},
  };
  for (auto& c : cases) {
    access_policy policy{rules()};
    auto err = policy.admit(as(c.principal), c.action, 0);
    if (c.expected == errc{}) {
      EXPECT_FALSE(err) << c.principal << ": " << render(err);
    } else {
      EXPECT_TRUE(is(err, c.expected)) << c.principal << ": " << render(err);
    }
  }
}

TEST(access_policy, a_star_admits_every_principal) {
  access_policy policy{access_rules{}};
  EXPECT_FALSE(policy.admit(as("anyone"), access_action::query, 0));
  EXPECT_FALSE(policy.admit(as("anyone"), access_action::manage, 0));
}

TEST(access_policy, token_bucket_holds_burst_then_refills_at_rate) {
  access_policy policy{rules()};
  auto bob = as("bob", "batch"); // rate 1/s, burst 2
  // time: admitted?
  struct {
    double now;
    bool admitted;
  } steps[] = {{0.0, true},  {0.0, true},  {0.0, false}, {0.5, false}, {1.0, true},
               {1.0, false}, {10.0, true}, {10.0, true}, {10.0, false}};
  for (auto& s : steps) {
    auto err = policy.admit(bob, access_action::query, s.now);
    EXPECT_EQ(!err, s.admitted) << "at " << s.now << ": " << render(err);
    if (!s.admitted) {
      EXPECT_TRUE(is(err, errc::quota_exceeded)) << render(err);
    }
  }
}

TEST(access_policy, each_principal_and_app_pair_has_its_own_bucket) {
  access_policy policy{rules()};
  // bob/web falls to the second rule (burst 1); bob/batch has its own bucket of 2.
  EXPECT_FALSE(policy.admit(as("bob", "web"), access_action::query, 0));
  EXPECT_TRUE(is(policy.admit(as("bob", "web"), access_action::query, 0), errc::quota_exceeded));
  EXPECT_FALSE(policy.admit(as("bob", "batch"), access_action::query, 0));
  EXPECT_FALSE(policy.admit(as("bob", "mobile"), access_action::query, 0));
  // alice matches no rule: unlimited.
  for (int i = 0; i < 100; ++i)
    ASSERT_FALSE(policy.admit(as("alice"), access_action::query, 0));
}

TEST(access_policy, manage_requests_take_no_token) {
  access_rules r = rules();
  r.acl.manage = {"bob"};
  access_policy policy{r};
  EXPECT_FALSE(policy.admit(as("bob", "batch"), access_action::query, 0));
  EXPECT_FALSE(policy.admit(as("bob", "batch"), access_action::query, 0));
  for (int i = 0; i < 5; ++i)
    EXPECT_FALSE(policy.admit(as("bob", "batch"), access_action::manage, 0));
}

TEST(access_policy, counts_requests_rows_and_each_denial_by_cause) {
  access_policy policy{rules()};
  EXPECT_FALSE(policy.admit(as("alice"), access_action::query, 0));
  policy.count_rows("alice", 10);
  EXPECT_FALSE(policy.admit(as("alice"), access_action::query, 0));
  policy.count_rows("alice", 7);
  EXPECT_TRUE(policy.admit(as("mallory"), access_action::query, 0));
  EXPECT_FALSE(policy.admit(as("bob", "web"), access_action::query, 0));
  EXPECT_TRUE(policy.admit(as("bob", "web"), access_action::query, 0));
  EXPECT_TRUE(policy.admit(as("bob", "web"), access_action::manage, 0));
  auto counters = policy.counters();
  ASSERT_EQ(counters.size(), 3u);
  auto& alice = counters[0];
  auto& bob = counters[1];
  auto& mallory = counters[2];
  EXPECT_EQ(alice.principal, "alice");
  EXPECT_EQ(alice.requests, 2u);
  EXPECT_EQ(alice.rows, 17u);
  EXPECT_EQ(bob.requests, 1u);
  EXPECT_EQ(bob.denied_quota, 1u);
  EXPECT_EQ(bob.denied_access, 1u);
  EXPECT_EQ(mallory.requests, 0u);
  EXPECT_EQ(mallory.denied_access, 1u);
}

} // namespace
} // namespace darcy::actors
