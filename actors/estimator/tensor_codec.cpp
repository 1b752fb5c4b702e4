#include "actors/estimator/tensor_codec.hpp"

#include <algorithm>

#include "messages/error.hpp"

namespace darcy::actors {

void append(named_tensors& out, const std::string& name, const compute::nn::matrix& m) {
  out.names.push_back(name);
  out.rows.push_back(static_cast<uint32_t>(m.rows()));
  out.cols.push_back(static_cast<uint32_t>(m.cols()));
  out.values.emplace_back(std::vector<float>(m.data(), m.data() + m.size()));
}

named_tensors encode(const compute::nn::parameter_list<float>& params, bool grads) {
  named_tensors out;
  for (auto* p : params)
    append(out, p->name, grads ? p->grad : p->value);
  return out;
}

caf::error check(const named_tensors& t) {
  auto n = t.names.size();
  if (t.rows.size() != n || t.cols.size() != n || t.values.size() != n)
    return make_error(errc::dimension_mismatch, "named tensors: " + std::to_string(n) +
                                                  " names but " + std::to_string(t.values.size()) +
                                                  " value buffers");
  for (size_t i = 0; i < n; ++i)
    if (t.values[i].size() != static_cast<size_t>(t.rows[i]) * t.cols[i])
      return make_error(errc::dimension_mismatch, "tensor '" + t.names[i] +
                                                    "': " + std::to_string(t.values[i].size()) +
                                                    " floats are not " + std::to_string(t.rows[i]) +
                                                    " x " + std::to_string(t.cols[i]));
  return {};
}

const_matrix_map view(const named_tensors& t, size_t i) {
  return {t.values[i].values().data(), static_cast<Eigen::Index>(t.rows[i]),
          static_cast<Eigen::Index>(t.cols[i])};
}

caf::error check_matches(const named_tensors& t, const compute::nn::parameter_list<float>& params) {
  if (t.names.size() != params.size())
    return make_error(errc::dimension_mismatch, std::to_string(t.names.size()) + " tensors for " +
                                                  std::to_string(params.size()) + " variables");
  for (size_t i = 0; i < params.size(); ++i) {
    auto& p = *params[i];
    if (t.names[i] != p.name || t.rows[i] != p.value.rows() || t.cols[i] != p.value.cols())
      return make_error(errc::dimension_mismatch,
                        "tensor " + std::to_string(i) + " is '" + t.names[i] + "' " +
                          std::to_string(t.rows[i]) + " x " + std::to_string(t.cols[i]) +
                          ", the variable is '" + p.name + "' " + std::to_string(p.value.rows()) +
                          " x " + std::to_string(p.value.cols()));
  }
  return {};
}

} // namespace darcy::actors
