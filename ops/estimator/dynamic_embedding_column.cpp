#include "ops/estimator/dynamic_embedding_column.hpp"

#include <string_view>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/distinct_keys.hpp"
#include "ops/embedding_ops.hpp"

namespace darcy::ops::estimator {

namespace {

namespace ce = compute::estimator;

class dynamic_embedding final : public ce::dense_column<float> {
public:
  dynamic_embedding(session& s, std::string key, ce::categorical_ptr column, de_config config,
                    ce::combiner how)
    : session_(s),
      key_(std::move(key)),
      column_(std::move(column)),
      config_(std::move(config)),
      how_(how) {}

  std::string name() const override { return config_.name + "_dynamic_embedding"; }
  uint32_t width() const override { return config_.dim; }
  bool trainable() override { return true; }
  void set_training(bool training) override { training_ = training; }

  plain_expected<matrix> forward(const ce::feature_map& features) override {
    // Each distinct key is looked up once; uses_ holds (example, key index) per occurrence.
    scales_.clear();
    uses_.clear();
    size_t examples = 0;
    if (!column_) {
      auto feature = ce::find_feature(features, key_, 0);
      if (!feature)
        return feature.error();
      examples =
        add_keys((*feature)->strings, [&](const std::string& k) { return distinct_.add(k); });
    } else {
      // Bucket ids are deduplicated as integers; each distinct one becomes its decimal key.
      auto ids = column_->ids(features);
      if (!ids)
        return ids.error();
      examples = add_keys(ids->rows, [&](uint64_t id) { return distinct_.add_id(id); });
    }
    matrix out = matrix::Zero(static_cast<Eigen::Index>(examples), config_.dim);
    handle_.reset();
    if (distinct_.size() == 0)
      return out;
    key_count_ = distinct_.size();
    std::vector<table_lookup> tables;
    tables.push_back({&config_, config_.name, {}, distinct_.take()});
    auto found = dynamic_embedding_lookup(session_, std::move(tables), training_);
    if (!found)
      return to_plain(found.error());
    auto& looked_up = found->rows.front();
    for (auto [r, k] : uses_)
      out.row(static_cast<Eigen::Index>(r)) +=
        scales_[r] * looked_up.row(static_cast<Eigen::Index>(k));
    if (training_)
      handle_ = std::move(found->handle);
    return out;
  }

  plain_error backward(const matrix& doutput) override {
    if (!handle_)
      return {};
    matrix grads = matrix::Zero(static_cast<Eigen::Index>(key_count_), config_.dim);
    for (auto [r, k] : uses_)
      grads.row(static_cast<Eigen::Index>(k)) +=
        scales_[r] * doutput.row(static_cast<Eigen::Index>(r));
    auto err = handle_->backward(grads, ++step_);
    handle_.reset();
    return err ? to_plain(err) : plain_error{};
  }

  nlohmann::json spec() const override {
    nlohmann::json out{{"kind", "dynamic_embedding"},
                       {"key", key_},
                       {"name", config_.name},
                       {"dimension", config_.dim},
                       {"combiner", ce::to_string(how_)}};
    if (column_)
      out["column"] = column_->spec();
    return out;
  }

private:
  /// Adds every key of `rows` (one row per example) to distinct_ through `add`, with each
  /// example's combiner scale and uses; returns the number of examples.
  template <class Rows, class Add>
  size_t add_keys(const Rows& rows, Add add) {
    size_t occurrences = 0;
    for (auto& row : rows)
      occurrences += row.size();
    distinct_.clear(occurrences);
    for (size_t r = 0; r < rows.size(); ++r) {
      scales_.push_back(static_cast<float>(ce::combiner_scale(how_, rows[r].size())));
      for (auto& k : rows[r])
        uses_.emplace_back(r, add(k));
    }
    return rows.size();
  }

  session& session_;
  std::string key_;
  ce::categorical_ptr column_;
  de_config config_;
  ce::combiner how_;
  bool training_ = true;
  distinct_keys distinct_;
  std::vector<float> scales_;
  /// (example, index of its string among the looked-up keys) for each string of the batch.
  std::vector<std::pair<size_t, uint32_t>> uses_;
  size_t key_count_ = 0;
  std::optional<lookup_handle> handle_;
  int64_t step_ = 0;
};

} // namespace

caf::expected<ce::dense_ptr<float>> dynamic_embedding_column(session& s, std::string key,
                                                             de_config config, ce::combiner how) {
  if (config.dim == 0)
    return make_error(errc::invalid_config,
                      "dynamic_embedding_column '" + key + "': dim must be >= 1");
  if (config.name.empty())
    config.name = key;
  return ce::dense_ptr<float>{
    std::make_shared<dynamic_embedding>(s, std::move(key), nullptr, std::move(config), how)};
}

caf::expected<ce::dense_ptr<float>> dynamic_embedding_column(session& s, ce::categorical_ptr column,
                                                             de_config config, ce::combiner how) {
  if (!column)
    return make_error(errc::invalid_config, "dynamic_embedding_column: no categorical column");
  auto name = column->name();
  if (config.dim == 0)
    return make_error(errc::invalid_config,
                      "dynamic_embedding_column '" + name + "': dim must be >= 1");
  if (config.name.empty())
    config.name = name;
  return ce::dense_ptr<float>{std::make_shared<dynamic_embedding>(
    s, std::move(name), std::move(column), std::move(config), how)};
}

} // namespace darcy::ops::estimator
