// A store in front of another that passes every call through to it: the base of the stores that
// watch the rows of the store below (tracked_store, indexed_store), which override the calls
// they watch and leave the rest to it.
#pragma once

#include <functional>
#include <memory>

#include "stores/embedding/embedding_store.hpp"

namespace darcy::stores {

class forwarding_store : public embedding_store {
public:
  /// `inner` must not be null.
  explicit forwarding_store(std::unique_ptr<embedding_store> inner) : inner_(std::move(inner)) {}

  size_t dim() const override { return inner_->dim(); }
  indexed_store* ann() override { return inner_->ann(); }
  using embedding_store::lookup;
  using embedding_store::update;
  caf::error lookup(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<float> out) override {
    return inner_->lookup(keys, hashes, lookup_counts(), out);
  }
  caf::error update(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                    std::span<const float> grads, int64_t step) override {
    return inner_->update(keys, hashes, grads, step);
  }
  caf::error prefetch(std::span<const std::string_view> keys,
                      std::span<const uint64_t> hashes) override {
    return inner_->prefetch(keys, hashes);
  }
  store_stats stats() const override { return inner_->stats(); }
  caf::error scan(const std::function<void(std::string_view, std::span<const float>)>& f) override {
    return inner_->scan(f);
  }
  size_t slot_floats() const override { return inner_->slot_floats(); }
  caf::error export_rows(const std::function<void(const row_record&)>& f) override {
    return inner_->export_rows(f);
  }
  caf::error import_row(const row_record& row) override { return inner_->import_row(row); }
  caf::error export_keys(std::span<const std::string_view> keys,
                         const std::function<void(const row_record&)>& found,
                         const std::function<void(std::string_view)>& missing) override {
    return inner_->export_keys(keys, found, missing);
  }
  caf::error remove_rows(std::span<const std::string_view> keys) override {
    return inner_->remove_rows(keys);
  }
  caf::expected<sample_stats> sample_metadata(const std::vector<std::string>& positives) override {
    return inner_->sample_metadata(positives);
  }
  caf::expected<sample_result> sample(const sample_plan& plan) override {
    return inner_->sample(plan);
  }

protected:
  std::unique_ptr<embedding_store> inner_;
};

} // namespace darcy::stores
