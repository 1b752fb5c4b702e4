// `darcy word2vec export`: trained word vectors, from a DE-Word2Vec checkpoint (train
// --checkpoint) or a vectors file (train --output), as a new version of a serving export
// (stores/serving/serving_export.hpp) with the cosine metric: a word's neighbours are served as
// {"items": [word]} queries, by the same roots and shards as a WALS model.
#pragma once

#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "apps/word2vec/vectors_io.hpp"
#include "compute/mips/mips_index.hpp"

namespace darcy::word2vec {

struct export_job {
  /// Exactly one of the two sources.
  std::string checkpoint;
  std::string vectors;
  /// The embedding prefix in the checkpoint: its `<name>.in` table holds the word vectors.
  std::string name = "w2v";
  /// EXPORTS/<name>: versions are written under it.
  std::string out;
  uint32_t shards = 1;
  /// Versions kept, the new one included.
  size_t keep = 3;
  compute::mips::ivf_pq_options index{.threads = 2};
  /// The shards' index kind, and the graph's options (built with index.threads threads).
  compute::mips::mips_index_kind kind = compute::mips::mips_index_kind::ivf_pq;
  compute::mips::graph_index_options graph;
};

/// Every row of the checkpoint's `<name>.in` table, in the order of its shard files.
/// errc::not_found without a checkpoint or without that table; errc::corrupt_file for a
/// damaged part.
caf::expected<word_vectors> read_checkpoint_vectors(const std::string& checkpoint,
                                                    const std::string& name);

caf::error run_export(const export_job& job);

} // namespace darcy::word2vec
