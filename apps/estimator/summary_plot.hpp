// `darcy estimator plot`: the curves of a summary_writer's JSONL file (one {"step", "loss",
// "seconds"} object per line) as a TSV and a PNG of the loss by step.
#pragma once

#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace darcy::apps {

/// Reads `jsonl` and writes OUT.tsv (step, loss, seconds) and OUT.png; returns the number of
/// points. errc::not_found for a missing file; errc::corrupt_file naming the line for a line
/// that is not such an object; errc::invalid_argument for a file without points.
caf::expected<size_t> plot_summary(const std::string& jsonl, const std::string& out);

} // namespace darcy::apps
