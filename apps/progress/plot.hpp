// Plots of the CLI's experiments: a gnuplot script written beside its PNG and run once.
#pragma once

#include <string>

#include <caf/error.hpp>

namespace darcy::apps {

/// Writes `script` (which must set its own terminal and output `png`) to `script_path` and
/// runs gnuplot on it. errc::io_error naming the PNG when the script cannot be written or
/// gnuplot fails (or is missing: make deps installs it).
caf::error draw_with_gnuplot(const std::string& script_path, const std::string& script,
                             const std::string& png);

} // namespace darcy::apps
