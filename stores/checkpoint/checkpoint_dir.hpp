// THE checkpoint mechanism of every Darcy service. A checkpoint root holds one directory per
// checkpoint (its parts, written by the service's actors) and one MANIFEST that names the
// current checkpoint and its parts with their checksums. The coordinator writes the manifest
// last and atomically, then removes the checkpoints it no longer names; so a crash at any moment
// leaves the previous manifest and every part it names intact. Only stores/ touches the files.
//
//   stores::checkpoint_dir root{"model/checkpoints"};
//   auto id = stores::checkpoint_dir::new_id("sweep-3");          // coordinator
//   auto part = root.write_part(id + "/rows-0-of-2.f32", bytes);   // each actor, its part
//   manifest.checkpoint = id; manifest.parts = {*part, ...};
//   root.commit(manifest);                                         // coordinator, last
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "messages/checkpoint.hpp"
#include "stores/mapped_file.hpp"

namespace darcy::stores {

/// Whether `id` may name a checkpoint or version directory of a root: a single, non-empty
/// file name ("3", "ckpt-sweep-2-..."): no '/', '\\' or NUL, not "." or "..". Else
/// errc::invalid_argument; the message names no path, since `id` may come from a client.
caf::error check_checkpoint_name(std::string_view id);

class checkpoint_dir {
public:
  explicit checkpoint_dir(std::string root) : root_(std::move(root)) {}
  /// Not `durable`: parts and manifests are not flushed to disk (base::write_file_atomically),
  /// for a copy of checkpoints that can be fetched again, such as a serving copy's.
  checkpoint_dir(std::string root, bool durable) : root_(std::move(root)), durable_(durable) {}

  const std::string& root() const { return root_; }

  /// A checkpoint id ("ckpt-LABEL-N-T") that no other save of any process reuses.
  static std::string new_id(const std::string& label);

  /// For roots of numbered versions (exports: ROOT/1, ROOT/2, ...): one more than the highest
  /// version directory under the root, "1" for none. Only one writer may number a root.
  std::string next_version() const;

  /// Creates the root if needed and checks that files can be created in it; errc::io_error
  /// naming the directory otherwise.
  caf::error prepare() const;

  /// Writes `bytes` to root/rel atomically, creating its directory; the returned file_info
  /// (path rel) carries their size and checksum. `rows` is the caller's count, kept as is.
  caf::expected<file_info> write_part(const std::string& rel, std::string_view bytes,
                                      uint64_t rows = 0) const;

  /// The bytes of a part, after checking size and checksum against `part` (parts of format 1,
  /// with checksum and bytes 0, are returned unchecked). errc::corrupt_file names the file.
  caf::expected<std::string> read_part(const file_info& part) const;

  /// Writes the manifest (last, atomically): a copy inside the checkpoint's directory, then the
  /// root's MANIFEST. Then removes every checkpoint directory but those of the `keep` newest
  /// chains (the new one's among them; a chain is a full checkpoint and the incremental ones
  /// whose base links lead to it, see checkpoint_chain.hpp), and every temporary file a crashed
  /// save left. When the manifest cannot be
  /// written, the new checkpoint's directory is removed instead and the previous checkpoint
  /// stays current.
  caf::error commit(const checkpoint_manifest& manifest, size_t keep = 1) const;

  /// The checkpoint directories under the root, newest first: ids by their time, version
  /// numbers by their value.
  std::vector<std::string> checkpoints() const;

  /// The manifest copy inside checkpoint directory `id`; check_checkpoint_name's error for an
  /// `id` that is not a name inside the root.
  caf::expected<checkpoint_manifest> read_manifest_of(const std::string& id) const;

  /// The part mapped into memory, after the same checks as read_part (parts of format 1 are
  /// refused: they carry no checksum).
  caf::expected<std::shared_ptr<const mapped_file>> map_part(const file_info& part) const;

  /// Reads every part `manifest` names and checks its size and checksum: the first damaged
  /// one fails with errc::corrupt_file.
  caf::error verify(const checkpoint_manifest& manifest) const;

  /// Removes checkpoint directory `id`, whose save failed before its manifest.
  void discard(const std::string& id) const;

  /// The current manifest: errc::not_found when the root holds none, errc::corrupt_file when it
  /// is damaged.
  caf::expected<checkpoint_manifest> read_manifest() const;

private:
  std::string path(const std::string& rel) const;

  std::string root_;
  bool durable_ = true;
};

} // namespace darcy::stores
