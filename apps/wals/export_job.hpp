// `darcy wals export`: a trained WALS model (wals train --out) as a new version of a serving
// export (stores/serving/serving_export.hpp): the root with the projection parameters, and n
// shards, each an item partition with its quantized index.
#pragma once

#include <string>

#include <caf/error.hpp>

#include "compute/mips/mips_index.hpp"

namespace darcy::wals {

struct export_job {
  std::string model;
  /// EXPORTS/<name>: versions are written under it.
  std::string out;
  uint32_t shards = 1;
  /// Versions kept, the new one included.
  size_t keep = 3;
  compute::mips::ivf_pq_options index{.threads = 2};
  /// The shards' index kind, and the graph's options (built with index.threads threads).
  compute::mips::mips_index_kind kind = compute::mips::mips_index_kind::ivf_pq;
  compute::mips::graph_index_options graph;
  /// Fault injection (tests): once every part is written and before the manifest, write this
  /// process's pid to the file and wait to be killed.
  std::string stall_before_commit;
};

caf::error run_export(const export_job& job);

} // namespace darcy::wals
