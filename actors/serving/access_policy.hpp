// Access control and accounting of one served model: its ACL (who may query, who may manage),
// token-bucket quotas per (principal, app), and per-principal counters of admitted requests,
// returned rows and denials by cause. Time is passed in, so that buckets are tested without
// clocks.
//
//   access_policy policy{rules};
//   if (auto err = policy.admit(ctx, access_action::query, seconds_now)) return err;
//   policy.count_rows(ctx.principal, hits.size());
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>

#include "messages/serving/serving_values.hpp"

namespace darcy::actors {

enum class access_action { query, manage };

class access_policy {
public:
  explicit access_policy(access_rules rules = {}) : rules_(std::move(rules)) {}

  /// Admits one request of ctx.principal (through ctx.app) for `action` at time `now`
  /// (seconds, never decreasing): errc::access_denied when the ACL does not list the principal
  /// for the action, else errc::quota_exceeded when the first quota rule matching (principal,
  /// app) has no token left (manage requests take none). Counts the request or the denial.
  caf::error admit(const request_context& ctx, access_action action, double now);

  /// Adds `rows` returned to an admitted request of `principal`.
  void count_rows(const std::string& principal, uint64_t rows);

  /// Every principal seen so far, by name.
  std::vector<principal_counters> counters() const;

private:
  struct bucket {
    double tokens = 0;
    double last = 0;
  };

  const quota_rule* quota_for(const request_context& ctx) const;
  principal_counters& counters_of(const std::string& principal);

  access_rules rules_;
  std::map<std::pair<std::string, std::string>, bucket> buckets_;
  std::map<std::string, principal_counters> counters_;
};

} // namespace darcy::actors
