// The options of `darcy wals export` and `darcy word2vec export` that choose the shards' index:
// --index (ivf-pq or graph) and the graph's --graph-m and --graph-ef-construction.
#pragma once

#include <CLI/CLI.hpp>

#include "compute/mips/mips_index.hpp"

namespace darcy::apps {

void add_export_index_options(CLI::App* cmd, compute::mips::mips_index_kind& kind,
                              compute::mips::graph_index_options& graph);

} // namespace darcy::apps
