// Running a benchmark's Python peer (FAISS, PyTorch) from Debian's interpreter, and naming the
// BLAS that such peers load, so that a comparison never runs them on the slow reference BLAS.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

namespace darcy::apps {

/// Runs `script` (Python source, saved under `dir`) with `python` and `args`, and returns its
/// standard output lines, also printed as they come with `echo`; an error when it exits with
/// another status than 0.
caf::expected<std::vector<std::string>> run_python(const std::string& python,
                                                   std::string_view script, const std::string& args,
                                                   const std::string& dir, bool echo = false);

/// The last of a peer's output `lines` that is a JSON object holding `key`; errc::io_error
/// when none is (the peer printed no result).
caf::expected<nlohmann::json> peer_result(const std::vector<std::string>& lines,
                                          const std::string& key);

/// The library behind Debian's libblas.so.3 alternative, which FAISS, NumPy and PyTorch load;
/// "none" when there is none.
std::string blas_in_use();

/// Nothing when the BLAS in use is OpenBLAS; otherwise errc::unavailable saying why the peer
/// cannot run fairly.
caf::error require_optimized_blas();

/// Nothing when the BLAS is optimized and `python` imports torch (and numpy); otherwise
/// errc::unavailable naming what to install, or that --no-peer skips the peer.
caf::error require_torch_peer(const std::string& python);

} // namespace darcy::apps
