// Order statistics over samples: percentiles and medians for latency reporting.
// Pure functions over copies; callers keep their samples in completion order.
#pragma once

#include <cstdint>
#include <vector>

namespace darcy::compute {

/// The q-quantile (q in [0, 1]) by the nearest-rank method; 0 for no samples.
double percentile(std::vector<double> samples, double q);

/// Converts integer nanoseconds to microseconds, for percentile().
std::vector<double> to_micros(const std::vector<int64_t>& nanos);

} // namespace darcy::compute
