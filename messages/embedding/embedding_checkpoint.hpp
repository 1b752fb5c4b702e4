// Checkpoint bookkeeping that travels between shards and the master: which file a shard wrote
// for an embedding, and the manifest that makes a set of files one consistent checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/embedding/embedding_config.hpp"

namespace darcy {

struct file_info {
  /// Relative to the checkpoint directory.
  std::string path;
  uint64_t checksum = 0;
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_info& x) {
  return f(caf::meta::type_name("file_info"), x.path, x.checksum, x.rows, x.bytes);
}

struct checkpoint_embedding {
  de_config config;
  std::vector<file_info> files;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_embedding& x) {
  return f(caf::meta::type_name("checkpoint_embedding"), x.config, x.files);
}

struct checkpoint_manifest {
  int64_t step = 0;
  uint32_t shard_count = 0;
  std::vector<checkpoint_embedding> embeddings;
  /// Caller state saved with the checkpoint: dense parameters, input position.
  std::string extra;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_manifest& x) {
  return f(caf::meta::type_name("checkpoint_manifest"), x.step, x.shard_count, x.embeddings,
           x.extra);
}

} // namespace darcy
