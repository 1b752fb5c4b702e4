// One checkpoint of a root with the bytes of every part it names, so that it can travel in a
// message: read and checked where it was written, installed (checked again) under another root,
// such as a serving copy's own folder. No file system is shared between the two.
//
//   auto link = stores::read_link(training_root, manifest);      // the writer's side
//   stores::install_link(mirror_root, *link, 1);                  // the receiver's side
#pragma once

#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

#include "messages/checkpoint.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::stores {

struct checkpoint_link {
  checkpoint_manifest manifest;
  /// The bytes of every part of `manifest`, in part_files(manifest)'s order.
  std::vector<std::string> parts;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_link& x) {
  return f(caf::meta::type_name("checkpoint_link"), x.manifest, x.parts);
}

/// Every part a manifest names: its embeddings' files (embedding by embedding, shard order),
/// then its plain parts.
std::vector<file_info> part_files(const checkpoint_manifest& m);

/// `manifest` with the bytes of its parts under `root`, each checked against the manifest
/// (checkpoint_dir::read_part's errors).
caf::expected<checkpoint_link> read_link(const checkpoint_dir& root,
                                         const checkpoint_manifest& manifest);

/// Whether `link` can be installed: errc::corrupt_file when a part's size or checksum differs
/// from its manifest's, or the link carries another number of parts; errc::invalid_argument for
/// a checkpoint name, or a part path other than CHECKPOINT/NAME/... (plain names), that could
/// leave the root.
caf::error check_link(const checkpoint_link& link);

/// Writes the link's parts under `root` and commits its manifest, keeping the `keep` newest
/// chains (checkpoint_dir::commit). check_link's refusals leave the root as it was.
caf::error install_link(const checkpoint_dir& root, const checkpoint_link& link, size_t keep);

} // namespace darcy::stores
