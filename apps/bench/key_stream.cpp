#include "apps/bench/key_stream.hpp"

#include <cmath>
#include <random>

namespace darcy::apps {

std::string key_of(uint64_t id) {
  return "key" + std::to_string(id);
}

std::vector<std::vector<uint64_t>> zipf_stream(uint64_t n, size_t batches, size_t batch,
                                               double exponent, uint64_t seed) {
  // Inverts the CDF.
  std::vector<double> cdf(n);
  double sum = 0;
  for (uint64_t k = 0; k < n; ++k) {
    sum += std::pow(static_cast<double>(k + 1), -exponent);
    cdf[k] = sum;
  }
  std::mt19937_64 rng{seed};
  std::uniform_real_distribution<double> u{0, sum};
  std::vector<std::vector<uint64_t>> result(batches, std::vector<uint64_t>(batch));
  for (auto& b : result)
    for (auto& id : b)
      id = std::min<uint64_t>(
        n - 1,
        static_cast<uint64_t>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin()));
  return result;
}

std::vector<key_strings> key_batches(const std::vector<std::vector<uint64_t>>& ids) {
  std::vector<key_strings> result;
  for (auto& b : ids) {
    key_strings keys;
    keys.reserve(b.size());
    for (auto id : b)
      keys.push_back(key_of(id));
    result.push_back(std::move(keys));
  }
  return result;
}

} // namespace darcy::apps
