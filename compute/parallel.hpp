// Fork-join over contiguous ranges, the one threading pattern of compute/: each thread takes
// its own range of [0, n), the caller's thread the first, and the call returns when all did.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace darcy::compute {

/// Runs body(part, begin, end) over [0, n) split into min(parts, n) contiguous ranges, at least
/// one, each on its own thread. Ranges are a function of n and parts only, so a body that
/// writes per-part results is deterministic.
template <class Body>
void parallel_ranges(size_t n, size_t parts, Body&& body) {
  parts = std::max<size_t>(1, std::min(parts, n));
  auto bound = [&](size_t p) { return n * p / parts; };
  std::vector<std::thread> pool;
  for (size_t p = 1; p < parts; ++p)
    pool.emplace_back([&, p] { body(p, bound(p), bound(p + 1)); });
  body(size_t{0}, size_t{0}, bound(1));
  for (auto& t : pool)
    t.join();
}

} // namespace darcy::compute
