#include "ops/estimator/dynamic_embedding_column.hpp"

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"

namespace darcy::ops::estimator {

namespace {

namespace ce = compute::estimator;

class dynamic_embedding final : public ce::dense_column<float> {
public:
  dynamic_embedding(session& s, std::string key, de_config config, ce::combiner how)
    : session_(s), key_(std::move(key)), config_(std::move(config)), how_(how) {}

  std::string name() const override { return config_.name + "_dynamic_embedding"; }
  uint32_t width() const override { return config_.dim; }
  bool trainable() override { return true; }
  void set_training(bool training) override { training_ = training; }

  plain_expected<matrix> forward(const ce::feature_map& features) override {
    auto feature = ce::find_feature(features, key_, 0);
    if (!feature)
      return feature.error();
    auto& rows = (*feature)->strings;
    std::vector<std::string> keys;
    scales_.clear();
    owner_.clear();
    for (size_t r = 0; r < rows.size(); ++r) {
      scales_.push_back(static_cast<float>(ce::combiner_scale(how_, rows[r].size())));
      for (auto& k : rows[r]) {
        keys.push_back(k);
        owner_.push_back(r);
      }
    }
    matrix out = matrix::Zero(static_cast<Eigen::Index>(rows.size()), config_.dim);
    handle_.reset();
    if (keys.empty())
      return out;
    auto found = dynamic_embedding_lookup(session_, std::move(keys), config_, config_.name, training_);
    if (!found)
      return to_plain(found.error());
    for (size_t i = 0; i < owner_.size(); ++i)
      out.row(static_cast<Eigen::Index>(owner_[i])) +=
        scales_[owner_[i]] * found->rows.row(static_cast<Eigen::Index>(i));
    if (training_)
      handle_ = std::move(found->handle);
    return out;
  }

  plain_error backward(const matrix& doutput) override {
    if (!handle_)
      return {};
    matrix grads(static_cast<Eigen::Index>(owner_.size()), config_.dim);
    for (size_t i = 0; i < owner_.size(); ++i)
      grads.row(static_cast<Eigen::Index>(i)) =
        scales_[owner_[i]] * doutput.row(static_cast<Eigen::Index>(owner_[i]));
    auto err = handle_->backward(grads, ++step_);
    handle_.reset();
    return err ? to_plain(err) : plain_error{};
  }

  nlohmann::json spec() const override {
    return {{"kind", "dynamic_embedding"}, {"key", key_}, {"name", config_.name},
            {"dimension", config_.dim}, {"combiner", ce::to_string(how_)}};
  }

private:
  session& session_;
  std::string key_;
  de_config config_;
  ce::combiner how_;
  bool training_ = true;
  std::vector<float> scales_;
  /// The example of each looked-up key, in lookup order.
  std::vector<size_t> owner_;
  std::optional<lookup_handle> handle_;
  int64_t step_ = 0;
};

} // namespace

caf::expected<ce::dense_ptr<float>> dynamic_embedding_column(session& s, std::string key,
                                                             de_config config, ce::combiner how) {
  if (config.dim == 0)
    return make_error(errc::invalid_config, "dynamic_embedding_column '" + key + "': dim must be >= 1");
  if (config.name.empty())
    config.name = key;
  return ce::dense_ptr<float>{std::make_shared<dynamic_embedding>(s, std::move(key), std::move(config), how)};
}

} // namespace darcy::ops::estimator
