#include "apps/serving/replica_set.hpp"

#include <algorithm>

#include "messages/error.hpp"

namespace darcy::serving {

caf::expected<std::vector<std::vector<std::string>>> assign_replicas(std::vector<std::string> up,
                                                                     size_t replicas) {
  if (replicas == 0)
    return make_error(errc::invalid_config, "replicas must be at least 1");
  if (up.size() < replicas)
    return make_error(errc::invalid_config,
                      std::to_string(replicas) + " replicas of the embedding shards need " +
                        std::to_string(replicas) + " cluster members up, and " +
                        std::to_string(up.size()) + " are");
  std::sort(up.begin(), up.end());
  std::vector<std::vector<std::string>> out(replicas);
  for (size_t i = 0; i < up.size(); ++i)
    out[i % replicas].push_back(up[i]);
  return out;
}

std::vector<std::string> reload_members(std::vector<std::string> up,
                                        const std::vector<std::vector<std::string>>& in_service) {
  std::sort(up.begin(), up.end());
  std::vector<std::string> out;
  for (auto& member : up) {
    bool taken = false;
    for (auto& copy : in_service)
      taken = taken || std::find(copy.begin(), copy.end(), member) != copy.end();
    if (!taken)
      out.push_back(member);
  }
  return out;
}

bool all_up(const std::vector<std::string>& members, const std::vector<std::string>& up) {
  for (auto& m : members)
    if (std::find(up.begin(), up.end(), m) == up.end())
      return false;
  return true;
}

std::vector<size_t> attempt_order(const std::vector<bool>& serving, size_t first) {
  std::vector<size_t> out;
  auto n = serving.size();
  for (bool pass : {true, false})
    for (size_t k = 0; k < n; ++k)
      if (auto i = (first + k) % n; serving[i] == pass)
        out.push_back(i);
  return out;
}

} // namespace darcy::serving
