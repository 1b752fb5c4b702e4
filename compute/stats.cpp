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

std::vector<double> to_micros(const std::vector<int64_t>& nanos) {
  std::vector<double> result;
  result.reserve(nanos.size());
  for (auto ns : nanos)
    result.push_back(static_cast<double>(ns) / 1000.0);
  return result;
}

} // namespace darcy::compute
