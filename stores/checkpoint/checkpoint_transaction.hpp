// One checkpoint being taken, from its fresh id to its manifest: every service that saves
// state spread over parts (the coordinator of the embedding master and the WALS chief, the MoE
// router, the Estimator, and the exports and dense syncs, as numbered versions) writes its parts
// under id() and ends with commit(), manifest last and
// atomic, or with discard(). A transaction dropped without either discards its directory, so a
// failed save never leaves a half-written checkpoint and the previous one stays current.
//
//   auto t = checkpoint_transaction::begin(model_dir, "step-100");
//   auto part = write_parameter_part(t->root(), t->id() + "/variables", vars, opt);
//   if (!part) return part.error();                // t discards the directory
//   return t->commit(manifest_with(*part), keep);
#pragma once

#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "messages/checkpoint.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::stores {

class checkpoint_transaction {
public:
  /// Prepares `root` (errc::io_error when it cannot be written) and picks a fresh id made from
  /// `label` (checkpoint_dir::new_id).
  static caf::expected<checkpoint_transaction> begin(std::string root, const std::string& label);

  /// The same under the next numbered version of `root` (checkpoint_dir::next_version), as
  /// exports and dense syncs are named.
  static caf::expected<checkpoint_transaction> begin_version(std::string root);

  /// A transaction under `id`, which must be fresh; `root` must be prepared.
  checkpoint_transaction(checkpoint_dir root, std::string id);

  checkpoint_transaction(checkpoint_transaction&& other) noexcept;
  checkpoint_transaction& operator=(checkpoint_transaction&&) = delete;
  checkpoint_transaction(const checkpoint_transaction&) = delete;
  checkpoint_transaction& operator=(const checkpoint_transaction&) = delete;
  ~checkpoint_transaction();

  const checkpoint_dir& root() const { return root_; }
  const std::string& id() const { return id_; }

  /// Commits `manifest` with its checkpoint set to id(), keeping the `keep` newest
  /// checkpoints; on failure the directory is discarded. Ends the transaction either way;
  /// errc::invalid_argument once it has ended.
  caf::error commit(checkpoint_manifest manifest, size_t keep);

  /// Removes the directory of id(); ends the transaction. Does nothing once ended.
  void discard();

private:
  checkpoint_dir root_;
  std::string id_;
  bool open_ = true;
};

} // namespace darcy::stores
