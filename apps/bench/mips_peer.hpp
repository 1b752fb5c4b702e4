// What both halves of `darcy-bench mips` (exact and quantized search) share: the datasets and
// raw float files for the FAISS peer (which runs through apps/bench/python_peer.hpp).
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "apps/bench/python_peer.hpp"
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

} // namespace darcy::apps
