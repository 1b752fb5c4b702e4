// Order statistics over samples: percentiles and medians for latency and benchmark reporting
// (with the steady clock's seconds they time), and Spearman's rank correlation for embedding
// evaluation. Pure functions over copies.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace darcy::compute {

/// The q-quantile (q in [0, 1]) by the nearest-rank method; 0 for no samples.
double percentile(std::vector<double> samples, double q);

/// The middle sample: of an even count the upper of the two middle ones, so that a median is
/// always a measured value; 0 for no samples.
double median(std::vector<double> samples);

/// Seconds from `start` to now on the steady clock: a benchmark's timings.
double seconds_since(std::chrono::steady_clock::time_point start);

/// Converts integer nanoseconds to microseconds, for percentile().
std::vector<double> to_micros(const std::vector<int64_t>& nanos);

/// Spearman's rho of paired samples: Pearson's correlation of their ranks, ties sharing their
/// average rank. NaN when there are fewer than two pairs or either side is constant.
/// Precondition: x.size() == y.size().
double spearman(const std::vector<double>& x, const std::vector<double>& y);

} // namespace darcy::compute
