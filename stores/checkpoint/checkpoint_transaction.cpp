#include "stores/checkpoint/checkpoint_transaction.hpp"

#include <utility>

#include "messages/error.hpp"

namespace darcy::stores {

caf::expected<checkpoint_transaction> checkpoint_transaction::begin(std::string root,
                                                                    const std::string& label) {
  checkpoint_dir dir{std::move(root)};
  if (auto err = dir.prepare())
    return err;
  return checkpoint_transaction{std::move(dir), checkpoint_dir::new_id(label)};
}

caf::expected<checkpoint_transaction> checkpoint_transaction::begin_version(std::string root) {
  checkpoint_dir dir{std::move(root)};
  if (auto err = dir.prepare())
    return err;
  auto version = dir.next_version();
  return checkpoint_transaction{std::move(dir), std::move(version)};
}

checkpoint_transaction::checkpoint_transaction(checkpoint_dir root, std::string id)
  : root_(std::move(root)), id_(std::move(id)) {
}

checkpoint_transaction::checkpoint_transaction(checkpoint_transaction&& other) noexcept
  : root_(std::move(other.root_)), id_(std::move(other.id_)), open_(other.open_) {
  other.open_ = false;
}

checkpoint_transaction::~checkpoint_transaction() {
  discard();
}

caf::error checkpoint_transaction::commit(checkpoint_manifest manifest, size_t keep) {
  if (!open_)
    return make_error(errc::invalid_argument,
                      "checkpoint " + id_ + " was already committed or discarded");
  manifest.checkpoint = id_;
  auto err = root_.commit(manifest, keep);
  if (err)
    root_.discard(id_);
  open_ = false;
  return err;
}

void checkpoint_transaction::discard() {
  if (!open_)
    return;
  root_.discard(id_);
  open_ = false;
}

} // namespace darcy::stores
