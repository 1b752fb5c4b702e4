// Which parameter server holds each dense variable of a model. Every client of the servers (the
// chief, each worker, the evaluator) computes the placement alone, so a placement must be a
// pure function of the variables' names and shapes, in order.
//
//   run_config cfg{.placement = greedy_by_size_placement()};  // balance bytes, as TF's greedy
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <caf/expected.hpp>

#include "compute/nn/tensor.hpp"

namespace darcy::ops::estimator {

using variable_list = compute::nn::parameter_list<float>;

/// out[i] is the server (< servers) of variable i of `vars`; one entry per variable.
using variable_placement =
  std::function<std::vector<uint32_t>(const variable_list& vars, uint32_t servers)>;

/// Variable i on server i mod servers (the default).
variable_placement round_robin_placement();

/// The variables from the largest down (ties by position), each on the server holding the
/// fewest bytes so far (the lowest index of equals): TensorFlow's
/// GreedyLoadBalancingStrategy with the byte size as the load.
variable_placement greedy_by_size_placement();

/// `placement` (round robin when empty) applied to `vars`, checked: errc::invalid_config when
/// it gives another number of entries than variables or a server ≥ `servers`.
caf::expected<std::vector<uint32_t>> place_variables(const variable_placement& placement,
                                                     const variable_list& vars, uint32_t servers);

} // namespace darcy::ops::estimator
