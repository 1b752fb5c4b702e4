#include "apps/cli/export_index_options.hpp"

#include "apps/command/command_line.hpp"

namespace darcy::apps {

void add_export_index_options(CLI::App* cmd, compute::mips::mips_index_kind& kind,
                              compute::mips::graph_index_options& graph) {
  using compute::mips::mips_index_kind;
  add_choice<mips_index_kind>(
    cmd, "--index", kind, {{"ivf-pq", mips_index_kind::ivf_pq}, {"graph", mips_index_kind::graph}},
    "Each shard's index: IVF-PQ (serve --probes, --rerank) or a graph "
    "(serve --ef)");
  cmd->add_option("--graph-m", graph.m, "--index graph: links per node (twice that at the bottom)")
    ->check(CLI::Range(2, 256));
  cmd
    ->add_option("--graph-ef-construction", graph.ef_construction,
                 "--index graph: the beam that finds a new node's links")
    ->check(CLI::Range(2, 100000));
}

} // namespace darcy::apps
