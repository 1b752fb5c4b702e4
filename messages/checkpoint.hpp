// The vocabulary of Darcy's one checkpoint mechanism (stores/checkpoint/checkpoint_dir.hpp), shared
// by every service: the parts (files) that a service's actors write, and the manifest that makes a
// set of parts one consistent checkpoint. A service adds its own section to the manifest
// (embeddings, wals); everything else is common.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/embedding/embedding_config.hpp"

namespace darcy {

/// One part of a checkpoint. A part written before the manifest named checksums (a WALS
/// checkpoint of format 1) has checksum and bytes 0: its own header is all that checks it.
struct file_info {
  /// Relative to the checkpoint root.
  std::string path;
  uint64_t checksum = 0;
  uint64_t rows = 0;
  uint64_t bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_info& x) {
  return f(caf::meta::type_name("file_info"), x.path, x.checksum, x.rows, x.bytes);
}

/// The embedding service's section: one entry per embedding, its files in shard order.
struct checkpoint_embedding {
  de_config config;
  std::vector<file_info> files;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_embedding& x) {
  return f(caf::meta::type_name("checkpoint_embedding"), x.config, x.files);
}

/// WALS's section: the run the checkpoint belongs to, and the loss after each sweep so far.
struct wals_checkpoint {
  uint64_t run_id = 0;
  std::vector<double> losses;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wals_checkpoint& x) {
  return f(caf::meta::type_name("wals_checkpoint"), x.run_id, x.losses);
}

/// Service names in manifests.
inline constexpr const char* embedding_service_name = "embedding";
inline constexpr const char* wals_service_name = "wals";

struct checkpoint_manifest {
  /// The service that wrote it; empty in embedding checkpoints of format 1.
  std::string service;
  /// The directory, under the checkpoint root, that holds this checkpoint's parts.
  std::string checkpoint;
  /// Embedding: the caller's step. WALS: the last sweep the checkpoint completes.
  int64_t step = 0;
  uint32_t shard_count = 0;
  std::vector<checkpoint_embedding> embeddings;
  /// The parts of services whose parts are plain files (WALS: factor files), shard order.
  std::vector<file_info> parts;
  wals_checkpoint wals;
  /// Caller state saved with the checkpoint: dense parameters, input position.
  std::string extra;
  /// An incremental (delta) checkpoint: the checkpoint directory it applies on, the one before
  /// it in its chain. Empty for a full checkpoint, which starts a chain.
  std::string base;
  /// A full checkpoint that starts a chain at the state of this delta of the previous chain
  /// (taken one after the other, nothing in between): a copy that followed the previous chain
  /// to that delta holds this checkpoint already. Empty otherwise.
  std::string same_as;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_manifest& x) {
  return f(caf::meta::type_name("checkpoint_manifest"), x.service, x.checkpoint, x.step,
           x.shard_count, x.embeddings, x.parts, x.wals, x.extra, x.base, x.same_as);
}

} // namespace darcy
