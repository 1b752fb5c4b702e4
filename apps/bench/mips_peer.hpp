// What both halves of `darcy bench mips` (exact and quantized search) share: the datasets, raw
// float files for the FAISS peer, and running the peer's Python script.
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "compute/top_k.hpp"

namespace darcy::apps {

struct mips_dataset {
  std::string name;
  std::string metric; // "ip" or "l2"
  compute::row_matrix items;
  compute::row_matrix queries;
};

/// Writes `m`'s floats, row after row, to `path`.
caf::error write_raw(const std::string& path, const compute::row_matrix& m);

/// Runs `script` (Python source, saved under `dir`) with `python` and `args`, and returns its
/// standard output lines, also printed as they come with `echo`; an error when it exits with
/// another status than 0.
caf::expected<std::vector<std::string>> run_python(const std::string& python,
                                                   const std::string& script,
                                                   const std::string& args,
                                                   const std::string& dir, bool echo = false);

} // namespace darcy::apps
