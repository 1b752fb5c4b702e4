// `darcy estimator plot`: the curves of a summary_writer's JSONL file (one {"step", "loss",
// "seconds"} object per line) as a TSV and a PNG of the loss by step.
#pragma once

#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace darcy::estimator_apps {

struct summary_plot {
  /// Points plotted.
  size_t points = 0;
  /// Lines cut short by a killed writer, skipped: the start of a summary object that never
  /// ended (the writer of a resumed run starts on a fresh line).
  size_t torn_lines = 0;
  /// Steps whose loss was not finite (JSON null: the writer's NaN or infinity), skipped.
  size_t non_finite = 0;
};

/// Reads `jsonl` and writes OUT.tsv (step, loss, seconds) and OUT.png. errc::not_found for a
/// missing file; errc::corrupt_file naming the line for any other line that is not such an
/// object; errc::invalid_argument for a file without points.
caf::expected<summary_plot> plot_summary(const std::string& jsonl, const std::string& out);

} // namespace darcy::estimator_apps
