#include "compute/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace darcy::compute {

double percentile(std::vector<double> samples, double q) {
  if (samples.empty())
    return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
  auto index = rank == 0 ? 0 : rank - 1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(index),
                   samples.end());
  return samples[index];
}

double median(std::vector<double> samples) {
  if (samples.empty())
    return 0;
  auto middle = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<double> to_micros(const std::vector<int64_t>& nanos) {
  std::vector<double> result;
  result.reserve(nanos.size());
  for (auto ns : nanos)
    result.push_back(static_cast<double>(ns) / 1000.0);
  return result;
}

namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> result(v.size());
  for (size_t i = 0; i < order.size();) {
    auto j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
      ++j;
    auto average = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (auto k = i; k <= j; ++k)
      result[order[k]] = average;
    i = j + 1;
  }
  return result;
}

} // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  auto n = x.size();
  if (n < 2 || y.size() != n)
    return std::nan("");
  auto rx = ranks(x);
  auto ry = ranks(y);
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += rx[i];
    my += ry[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  if (sxx == 0 || syy == 0)
    return std::nan("");
  return sxy / std::sqrt(sxx * syy);
}

} // namespace darcy::compute
