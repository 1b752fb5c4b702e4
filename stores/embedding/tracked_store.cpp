#include "stores/embedding/tracked_store.hpp"

namespace darcy::stores {

tracked_store::tracked_store(std::unique_ptr<embedding_store> inner, size_t limit)
  : forwarding_store(std::move(inner)), limit_(limit) {
  inner_->set_erase_observer([this](std::string_view key) { note(key); });
}

tracked_store::~tracked_store() {
  if (inner_)
    inner_->set_erase_observer({});
}

std::unique_ptr<embedding_store> tracked_store::release() {
  inner_->set_erase_observer({});
  return std::move(inner_);
}

void tracked_store::note(std::string_view key) {
  if (overflowed_ || changed_.find(key) != changed_.end()) // most keys repeat: no copy for them
    return;
  changed_.emplace(key);
  if (changed_.size() > limit_) {
    overflowed_ = true;
    changed_ = {};
  }
}

changed_keys tracked_store::take() {
  changed_keys result;
  result.overflowed = overflowed_;
  result.keys.reserve(changed_.size());
  for (auto it = changed_.begin(); it != changed_.end();)
    result.keys.push_back(std::move(changed_.extract(it++).value()));
  overflowed_ = false;
  return result;
}

void tracked_store::put_back(const changed_keys& earlier) {
  if (earlier.overflowed) {
    overflowed_ = true;
    changed_ = {};
    return;
  }
  for (auto& key : earlier.keys)
    note(key);
}

caf::error tracked_store::lookup(std::span<const std::string_view> keys,
                                 std::span<const uint64_t> hashes, std::span<float> out) {
  auto err = inner_->lookup(keys, hashes, lookup_counts(), out);
  // A failed lookup may have created rows before it failed.
  for (auto key : keys)
    note(key);
  return err;
}

caf::error tracked_store::update(std::span<const std::string_view> keys,
                                 std::span<const uint64_t> hashes, std::span<const float> grads,
                                 int64_t step) {
  auto err = inner_->update(keys, hashes, grads, step);
  if (!err)
    for (auto key : keys)
      note(key);
  return err;
}

caf::error tracked_store::import_row(const row_record& row) {
  auto err = inner_->import_row(row);
  if (!err)
    note(row.key);
  return err;
}

caf::error tracked_store::remove_rows(std::span<const std::string_view> keys) {
  auto err = inner_->remove_rows(keys);
  if (!err)
    for (auto key : keys)
      note(key);
  return err;
}

} // namespace darcy::stores
