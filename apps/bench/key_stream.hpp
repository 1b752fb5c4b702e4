// Key streams for the embedding benchmarks: batches of key ids drawn from a Zipf law (or
// uniformly), their string keys, and a rows-per-second timer whose figure is a median.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace darcy::apps {

using key_strings = std::vector<std::string>;

/// "key<id>".
std::string key_of(uint64_t id);

/// `batches` batches of `batch` ids from Zipf(`exponent`) over [0, n) (exponent 0: uniform),
/// drawn with `seed`.
std::vector<std::vector<uint64_t>> zipf_stream(uint64_t n, size_t batches, size_t batch,
                                               double exponent, uint64_t seed = 2026);

/// The keys of each batch of ids.
std::vector<key_strings> key_batches(const std::vector<std::vector<uint64_t>>& ids);

/// Rows per second of run(b) over every batch, the median of `repetitions` passes.
template <class Batch, class F>
double rows_per_second(const std::vector<Batch>& batches, uint32_t repetitions, F run) {
  using clock = std::chrono::steady_clock;
  std::vector<double> passes;
  for (uint32_t r = 0; r < repetitions; ++r) {
    size_t rows = 0;
    auto begin = clock::now();
    for (auto& b : batches) {
      run(b);
      rows += b.size();
    }
    passes.push_back(static_cast<double>(rows) /
                     std::chrono::duration<double>(clock::now() - begin).count());
  }
  std::sort(passes.begin(), passes.end());
  return passes[passes.size() / 2];
}

} // namespace darcy::apps
