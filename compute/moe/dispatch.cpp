#include "compute/moe/dispatch.hpp"

#include <algorithm>

#include "compute/parallel.hpp"

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
  plan.row_offsets.assign(static_cast<size_t>(plan.batch) + 1, 0);
  for (auto r : plan.rows)
    ++plan.row_offsets[r + 1];
  for (uint32_t r = 0; r < plan.batch; ++r)
    plan.row_offsets[r + 1] += plan.row_offsets[r];
  plan.row_slots.resize(plan.rows.size());
  std::vector<uint32_t> fill(plan.row_offsets.begin(), plan.row_offsets.end() - 1);
  for (uint32_t s = 0; s < plan.slots(); ++s)
    plan.row_slots[fill[plan.rows[s]]++] = s;
  return plan;
}

template <class T>
matrix_t<T> dispatch(const matrix_t<T>& x, const dispatch_plan& plan, size_t threads) {
  matrix_t<T> out(plan.slots(), x.cols());
  parallel_ranges(plan.slots(), threads, [&](size_t, size_t begin, size_t end) {
    for (auto s = begin; s < end; ++s)
      out.row(s) = x.row(plan.rows[s]);
  });
  return out;
}

template <class T>
matrix_t<T> dispatch_backward(const matrix_t<T>& d, const dispatch_plan& plan, size_t threads) {
  matrix_t<T> dx(plan.batch, d.cols());
  parallel_ranges(plan.batch, threads, [&](size_t, size_t begin, size_t end) {
    for (auto r = begin; r < end; ++r) {
      dx.row(r).setZero();
      for (auto i = plan.row_offsets[r]; i < plan.row_offsets[r + 1]; ++i)
        dx.row(r) += d.row(plan.row_slots[i]);
    }
  });
  return dx;
}

template <class T>
matrix_t<T> combine(const matrix_t<T>& out, const dispatch_plan& plan, size_t threads) {
  matrix_t<T> y(plan.batch, out.cols());
  parallel_ranges(plan.batch, threads, [&](size_t, size_t begin, size_t end) {
    for (auto r = begin; r < end; ++r) {
      y.row(r).setZero();
      for (auto i = plan.row_offsets[r]; i < plan.row_offsets[r + 1]; ++i) {
        auto s = plan.row_slots[i];
        y.row(r) += static_cast<T>(plan.gates[s]) * out.row(s);
      }
    }
  });
  return y;
}

template <class T>
void combine_backward(const matrix_t<T>& dy, const matrix_t<T>& out, const dispatch_plan& plan,
                      matrix_t<T>& dout, matrix_t<T>& dgates, size_t threads) {
  dout.resize(plan.slots(), dy.cols());
  dgates = matrix_t<T>::Zero(plan.batch, plan.experts());
  auto bounds = balanced_expert_ranges(plan, threads);
  parallel_ranges(bounds.size() - 1, bounds.size() - 1, [&](size_t part, size_t, size_t) {
    for (auto e = bounds[part]; e < bounds[part + 1]; ++e)
      for (auto s = plan.offsets[e]; s < plan.offsets[e + 1]; ++s) {
        auto r = plan.rows[s];
        dout.row(s) = static_cast<T>(plan.gates[s]) * dy.row(r);
        dgates(r, e) = dy.row(r).dot(out.row(s));
      }
  });
}

std::vector<uint32_t> balanced_expert_ranges(const dispatch_plan& plan, size_t parts) {
  auto n = plan.experts();
  parts = std::max<size_t>(1, std::min<size_t>(parts, std::max<uint32_t>(n, 1)));
  std::vector<uint32_t> bounds{0};
  uint32_t e = 0;
  for (size_t p = 1; p < parts; ++p) {
    auto target = static_cast<uint64_t>(plan.slots()) * p / parts;
    while (e < n && plan.offsets[e + 1] <= target)
      ++e;
    // The nearer of the two boundaries around the target.
    if (e < n && plan.offsets[e + 1] - target < target - plan.offsets[e])
      ++e;
    bounds.push_back(std::max(e, bounds.back()));
  }
  bounds.push_back(n);
  return bounds;
}

#define DARCY_MOE_DISPATCH(T)                                                                     \
  template dispatch_plan make_plan<T>(const matrix_t<T>&);                                        \
  template matrix_t<T> dispatch<T>(const matrix_t<T>&, const dispatch_plan&, size_t);             \
  template matrix_t<T> dispatch_backward<T>(const matrix_t<T>&, const dispatch_plan&, size_t);    \
  template matrix_t<T> combine<T>(const matrix_t<T>&, const dispatch_plan&, size_t);              \
  template void combine_backward<T>(const matrix_t<T>&, const matrix_t<T>&, const dispatch_plan&, \
                                    matrix_t<T>&, matrix_t<T>&, size_t);
DARCY_MOE_DISPATCH(float)
DARCY_MOE_DISPATCH(double)
#undef DARCY_MOE_DISPATCH

} // namespace darcy::compute::moe
