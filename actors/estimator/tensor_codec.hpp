// Dense variables to and from named_tensors, the form they take in messages to and from the
// parameter servers: the values, the gradients, or the Adam moments of a parameter list.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Core>
#include <caf/error.hpp>

#include "compute/nn/tensor.hpp"
#include "messages/estimator/estimator_interfaces.hpp"

namespace darcy::actors {

using const_matrix_map = Eigen::Map<const compute::nn::matrix>;

/// Appends `m` as tensor `name` (one copy of its floats).
void append(named_tensors& out, const std::string& name, const compute::nn::matrix& m);

/// The values (or, with `grads`, the gradients) of `params`, in order.
named_tensors encode(const compute::nn::parameter_list<float>& params, bool grads = false);

/// errc::dimension_mismatch naming the tensor when the four vectors differ in length or a
/// tensor's floats are not rows × cols.
caf::error check(const named_tensors& t);

/// Tensor i as a matrix. Precondition: check(t) passed and i < t.names.size().
const_matrix_map view(const named_tensors& t, size_t i);

/// errc::dimension_mismatch naming the first difference unless `t` has exactly the names and
/// shapes of `params`, in order. Precondition: check(t) passed.
caf::error check_matches(const named_tensors& t, const compute::nn::parameter_list<float>& params);

} // namespace darcy::actors
