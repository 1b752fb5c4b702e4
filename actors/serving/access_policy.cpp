#include "actors/serving/access_policy.hpp"

#include <algorithm>

#include "messages/error.hpp"

namespace darcy::actors {

namespace {

bool lists(const std::vector<std::string>& names, const std::string& principal) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n == "*" || n == principal; });
}

bool matches(const std::string& pattern, const std::string& value) {
  return pattern == "*" || pattern == value;
}

} // namespace

const quota_rule* access_policy::quota_for(const request_context& ctx) const {
  for (auto& rule : rules_.quotas)
    if (matches(rule.principal, ctx.principal) && matches(rule.app, ctx.app))
      return &rule;
  return nullptr;
}

principal_counters& access_policy::counters_of(const std::string& principal) {
  auto& c = counters_[principal];
  c.principal = principal;
  return c;
}

caf::error access_policy::admit(const request_context& ctx, access_action action, double now) {
  auto& counters = counters_of(ctx.principal);
  auto& allowed = action == access_action::query ? rules_.acl.query : rules_.acl.manage;
  if (!lists(allowed, ctx.principal)) {
    ++counters.denied_access;
    return make_error(errc::access_denied, "principal '" + ctx.principal + "' may not " +
                                             (action == access_action::query ? "query" : "manage") +
                                             " this model");
  }
  if (action == access_action::query) {
    if (auto rule = quota_for(ctx)) {
      auto key = std::make_pair(ctx.principal, ctx.app);
      auto found = buckets_.find(key);
      if (found == buckets_.end())
        found = buckets_.emplace(key, bucket{rule->burst, now}).first;
      auto& b = found->second;
      b.tokens = std::min(rule->burst, b.tokens + std::max(0.0, now - b.last) * rule->rate);
      b.last = std::max(b.last, now);
      if (b.tokens < 1) {
        ++counters.denied_quota;
        return make_error(errc::quota_exceeded, "principal '" + ctx.principal + "' with app '" +
                                                  ctx.app + "' is limited to " +
                                                  std::to_string(rule->rate) +
                                                  " requests per second");
      }
      b.tokens -= 1;
    }
  }
  ++counters.requests;
  return {};
}

void access_policy::count_rows(const std::string& principal, uint64_t rows) {
  counters_of(principal).rows += rows;
}

std::vector<principal_counters> access_policy::counters() const {
  std::vector<principal_counters> result;
  for (auto& [name, c] : counters_)
    result.push_back(c);
  return result;
}

} // namespace darcy::actors
