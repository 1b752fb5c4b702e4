#include "compute/moe/dispatch.hpp"

namespace darcy::compute::moe {

template <class T>
dispatch_plan make_plan(const matrix_t<T>& gates) {
  dispatch_plan plan;
  plan.batch = static_cast<uint32_t>(gates.rows());
  auto n = gates.cols();
  plan.offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (Eigen::Index r = 0; r < gates.rows(); ++r)
    for (Eigen::Index e = 0; e < n; ++e)
      if (gates(r, e) != 0)
        ++plan.offsets[e + 1];
  for (Eigen::Index e = 0; e < n; ++e)
    plan.offsets[e + 1] += plan.offsets[e];
  plan.rows.resize(plan.offsets.back());
  plan.gates.resize(plan.offsets.back());
  std::vector<uint32_t> next(plan.offsets.begin(), plan.offsets.end() - 1);
  for (Eigen::Index r = 0; r < gates.rows(); ++r)
    for (Eigen::Index e = 0; e < n; ++e)
      if (gates(r, e) != 0) {
        auto s = next[e]++;
        plan.rows[s] = static_cast<uint32_t>(r);
        plan.gates[s] = static_cast<double>(gates(r, e));
      }
  return plan;
}

template <class T>
matrix_t<T> dispatch(const matrix_t<T>& x, const dispatch_plan& plan) {
  matrix_t<T> out(plan.slots(), x.cols());
  for (uint32_t s = 0; s < plan.slots(); ++s)
    out.row(s) = x.row(plan.rows[s]);
  return out;
}

template <class T>
matrix_t<T> dispatch_backward(const matrix_t<T>& d, const dispatch_plan& plan) {
  matrix_t<T> dx = matrix_t<T>::Zero(plan.batch, d.cols());
  for (uint32_t s = 0; s < plan.slots(); ++s)
    dx.row(plan.rows[s]) += d.row(s);
  return dx;
}

template <class T>
matrix_t<T> combine(const matrix_t<T>& out, const dispatch_plan& plan) {
  matrix_t<T> y = matrix_t<T>::Zero(plan.batch, out.cols());
  for (uint32_t s = 0; s < plan.slots(); ++s)
    y.row(plan.rows[s]) += static_cast<T>(plan.gates[s]) * out.row(s);
  return y;
}

template <class T>
void combine_backward(const matrix_t<T>& dy, const matrix_t<T>& out, const dispatch_plan& plan,
                      matrix_t<T>& dout, matrix_t<T>& dgates) {
  dout.resize(plan.slots(), dy.cols());
  dgates = matrix_t<T>::Zero(plan.batch, plan.experts());
  for (uint32_t e = 0; e < plan.experts(); ++e)
    for (auto s = plan.offsets[e]; s < plan.offsets[e + 1]; ++s) {
      auto r = plan.rows[s];
      dout.row(s) = static_cast<T>(plan.gates[s]) * dy.row(r);
      dgates(r, e) = dy.row(r).dot(out.row(s));
    }
}

#define DARCY_MOE_DISPATCH(T)                                                                \
  template dispatch_plan make_plan<T>(const matrix_t<T>&);                                  \
  template matrix_t<T> dispatch<T>(const matrix_t<T>&, const dispatch_plan&);               \
  template matrix_t<T> dispatch_backward<T>(const matrix_t<T>&, const dispatch_plan&);      \
  template matrix_t<T> combine<T>(const matrix_t<T>&, const dispatch_plan&);                \
  template void combine_backward<T>(const matrix_t<T>&, const matrix_t<T>&,                 \
                                    const dispatch_plan&, matrix_t<T>&, matrix_t<T>&);
DARCY_MOE_DISPATCH(float)
DARCY_MOE_DISPATCH(double)
#undef DARCY_MOE_DISPATCH

} // namespace darcy::compute::moe
