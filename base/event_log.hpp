// An append-only text log of one line per event, such as the WALS chief's record of every
// token it issued and committed. Each append opens, appends and closes, so the file is
// complete up to the last line written, whatever happens to the process next.
#pragma once

#include <string>
#include <string_view>

#include <caf/error.hpp>

namespace darcy::base {

/// Appends `line` and a newline to the file at `path`, creating it; errc::io_error on failure.
caf::error append_line(const std::string& path, std::string_view line);

} // namespace darcy::base
