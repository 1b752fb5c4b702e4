#include "ops/estimator/variable_placement.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "compute/placement.hpp"
#include "messages/error.hpp"

namespace darcy::ops::estimator {

variable_placement round_robin_placement() {
  return [](const variable_list& vars, uint32_t servers) {
    std::vector<uint32_t> out(vars.size());
    for (size_t i = 0; i < vars.size(); ++i)
      out[i] = compute::shard_of(i, servers);
    return out;
  };
}

variable_placement greedy_by_size_placement() {
  return [](const variable_list& vars, uint32_t servers) {
    std::vector<size_t> order(vars.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return vars[a]->value.size() > vars[b]->value.size();
    });
    std::vector<uint64_t> load(servers, 0);
    std::vector<uint32_t> out(vars.size());
    for (auto i : order) {
      auto s = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
      out[i] = s;
      load[s] += static_cast<uint64_t>(vars[i]->value.size()) * sizeof(float);
    }
    return out;
  };
}

caf::expected<std::vector<uint32_t>> place_variables(const variable_placement& placement,
                                                     const variable_list& vars, uint32_t servers) {
  auto out = placement ? placement(vars, servers) : round_robin_placement()(vars, servers);
  if (out.size() != vars.size())
    return make_error(errc::invalid_config, "variable placement: " + std::to_string(out.size()) +
                                              " servers for " + std::to_string(vars.size()) +
                                              " variables");
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] >= servers)
      return make_error(errc::invalid_config, "variable placement: " + vars[i]->name +
                                                " on server " + std::to_string(out[i]) + " of " +
                                                std::to_string(servers));
  return out;
}

} // namespace darcy::ops::estimator
