// Order statistics over samples: percentiles for latency reporting, and Spearman's rank
// correlation for embedding evaluation. Pure functions over copies.
#pragma once

#include <cstdint>
#include <vector>

namespace darcy::compute {

/// The q-quantile (q in [0, 1]) by the nearest-rank method; 0 for no samples.
double percentile(std::vector<double> samples, double q);

/// Converts integer nanoseconds to microseconds, for percentile().
std::vector<double> to_micros(const std::vector<int64_t>& nanos);

/// Spearman's rho of paired samples: Pearson's correlation of their ranks, ties sharing their
/// average rank. NaN when there are fewer than two pairs or either side is constant.
/// Precondition: x.size() == y.size().
double spearman(const std::vector<double>& x, const std::vector<double>& y);

} // namespace darcy::compute
