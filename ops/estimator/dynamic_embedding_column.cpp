#include "ops/estimator/dynamic_embedding_column.hpp"

#include <chrono>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "ops/distinct_keys.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/embedding_prefetch.hpp"

namespace darcy::ops::estimator {

namespace {

namespace ce = compute::estimator;

/// One field and what its last forward kept for the backward.
struct field_state {
  dynamic_field field;
  distinct_keys distinct;
  std::vector<float> scales;
  /// (example, index of its key among the looked-up keys) for each key of the batch.
  std::vector<std::pair<size_t, uint32_t>> uses;
  size_t key_count = 0;
  /// Its index among the tables of the last lookup; -1 when the batch had none of its keys.
  int table = -1;
};

thread_local embedding_seconds spent;

/// Adds the seconds since construction to `into`.
class stopwatch {
public:
  explicit stopwatch(double& into) : into_(into) {}
  ~stopwatch() {
    into_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

private:
  double& into_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// The rows of one or more fields side by side, all looked up in one request.
class dynamic_embedding final : public ce::dense_column<float> {
public:
  dynamic_embedding(session& s, std::vector<dynamic_field> fields, ce::combiner how)
    : session_(s), how_(how) {
    for (auto& f : fields) {
      width_ += f.config.dim;
      fields_.push_back({std::move(f), {}, {}, {}, 0, -1});
    }
  }

  std::string name() const override {
    std::string out = fields_.front().field.config.name;
    for (size_t i = 1; i < fields_.size(); ++i)
      out += "+" + fields_[i].field.config.name;
    return out + (fields_.size() == 1 ? "_dynamic_embedding" : "_dynamic_embeddings");
  }
  uint32_t width() const override { return width_; }
  bool trainable() override { return true; }
  void set_training(bool training) override { training_ = training; }

  plain_expected<matrix> forward(const ce::feature_map& features) override {
    std::optional<size_t> examples;
    std::vector<table_lookup> tables;
    for (auto& f : fields_) {
      auto rows = collect(f, features);
      if (!rows)
        return rows.error();
      if (examples && *rows != *examples)
        return plain_error{errc::invalid_argument, name() + ": feature '" + f.field.key + "' has " +
                                                     std::to_string(*rows) + " rows, not " +
                                                     std::to_string(*examples)};
      examples = *rows;
      f.table = -1;
      f.key_count = f.distinct.size();
      if (f.key_count == 0)
        continue;
      f.table = static_cast<int>(tables.size());
      tables.push_back({&f.field.config, f.field.config.name, {}, f.distinct.take()});
    }
    matrix out = matrix::Zero(static_cast<Eigen::Index>(*examples), width_);
    handle_.reset();
    if (tables.empty())
      return out;
    auto found = [&] {
      stopwatch clock{spent.lookup};
      return dynamic_embedding_lookup(session_, std::move(tables), training_);
    }();
    if (!found)
      return to_plain(found.error());
    Eigen::Index offset = 0;
    for (auto& f : fields_) {
      auto dim = static_cast<Eigen::Index>(f.field.config.dim);
      if (f.table >= 0) {
        auto& rows = found->rows[static_cast<size_t>(f.table)];
        for (auto [r, k] : f.uses)
          out.block(static_cast<Eigen::Index>(r), offset, 1, dim) +=
            f.scales[r] * rows.row(static_cast<Eigen::Index>(k));
      }
      offset += dim;
    }
    if (training_)
      handle_ = std::move(found->handle);
    return out;
  }

  plain_error backward(const matrix& doutput) override {
    if (!handle_)
      return {};
    std::vector<matrix> grads;
    Eigen::Index offset = 0;
    for (auto& f : fields_) {
      auto dim = static_cast<Eigen::Index>(f.field.config.dim);
      if (f.table >= 0) {
        auto& g = grads.emplace_back(matrix::Zero(static_cast<Eigen::Index>(f.key_count), dim));
        for (auto [r, k] : f.uses)
          g.row(static_cast<Eigen::Index>(k)) +=
            f.scales[r] * doutput.block(static_cast<Eigen::Index>(r), offset, 1, dim);
      }
      offset += dim;
    }
    std::vector<const matrix*> pointers;
    for (auto& g : grads)
      pointers.push_back(&g);
    auto err = [&] {
      stopwatch clock{spent.backward};
      return handle_->backward(pointers, ++step_);
    }();
    handle_.reset();
    return err ? to_plain(err) : plain_error{};
  }

  /// The keys of every field of `features`, each table's distinct, to ops::prefetch_rows.
  /// Reads only what construction set, so that another thread may call it.
  caf::error prefetch(const ce::feature_map& features) const {
    std::vector<table_lookup> tables;
    for (auto& f : fields_) {
      distinct_keys distinct;
      if (!f.field.column) {
        auto feature = ce::find_feature(features, f.field.key, 0);
        if (!feature)
          return make_error(feature.error());
        for (auto& row : (*feature)->strings)
          for (auto& k : row)
            distinct.add(k);
      } else {
        auto ids = f.field.column->ids(features);
        if (!ids)
          return make_error(ids.error());
        for (auto& row : ids->rows)
          for (auto id : row)
            distinct.add_id(id);
      }
      if (distinct.size() > 0)
        tables.push_back({&f.field.config, f.field.config.name, {}, distinct.take()});
    }
    return ops::prefetch_rows(session_, std::move(tables));
  }

  nlohmann::json spec() const override {
    if (fields_.size() == 1)
      return field_spec(fields_.front().field, "dynamic_embedding");
    auto fields = nlohmann::json::array();
    for (auto& f : fields_)
      fields.push_back(field_spec(f.field, "dynamic_embedding"));
    return {{"kind", "dynamic_embeddings"}, {"fields", fields}, {"combiner", ce::to_string(how_)}};
  }

private:
  nlohmann::json field_spec(const dynamic_field& f, const char* kind) const {
    nlohmann::json out{{"kind", kind},
                       {"key", f.key},
                       {"name", f.config.name},
                       {"dimension", f.config.dim},
                       {"combiner", ce::to_string(how_)}};
    if (f.column)
      out["column"] = f.column->spec();
    return out;
  }

  /// The field's keys of the batch into f.distinct, with each example's combiner scale and
  /// uses; returns the number of examples.
  plain_expected<size_t> collect(field_state& f, const ce::feature_map& features) {
    f.scales.clear();
    f.uses.clear();
    if (!f.field.column) {
      auto feature = ce::find_feature(features, f.field.key, 0);
      if (!feature)
        return feature.error();
      return add_keys(f, (*feature)->strings,
                      [&](const std::string& k) { return f.distinct.add(k); });
    }
    // Bucket ids are deduplicated as integers; each distinct one becomes its decimal key.
    auto ids = f.field.column->ids(features);
    if (!ids)
      return ids.error();
    return add_keys(f, ids->rows, [&](uint64_t id) { return f.distinct.add_id(id); });
  }

  template <class Rows, class Add>
  size_t add_keys(field_state& f, const Rows& rows, Add add) {
    size_t occurrences = 0;
    for (auto& row : rows)
      occurrences += row.size();
    f.distinct.clear(occurrences);
    for (size_t r = 0; r < rows.size(); ++r) {
      f.scales.push_back(static_cast<float>(ce::combiner_scale(how_, rows[r].size())));
      for (auto& k : rows[r])
        f.uses.emplace_back(r, add(k));
    }
    return rows.size();
  }

  session& session_;
  std::vector<field_state> fields_;
  ce::combiner how_;
  uint32_t width_ = 0;
  bool training_ = true;
  std::optional<lookup_handle> handle_;
  int64_t step_ = 0;
};

} // namespace

caf::expected<ce::dense_ptr<float>> dynamic_embedding_columns(session& s,
                                                              std::vector<dynamic_field> fields,
                                                              ce::combiner how) {
  if (fields.empty())
    return make_error(errc::invalid_config, "dynamic_embedding_columns: no field");
  std::set<std::string> names;
  for (auto& f : fields) {
    if (f.key.empty() && f.column)
      f.key = f.column->name();
    if (f.config.dim == 0)
      return make_error(errc::invalid_config,
                        "dynamic_embedding_column '" + f.key + "': dim must be >= 1");
    if (f.config.name.empty())
      f.config.name = f.key;
    if (!names.insert(f.config.name).second)
      return make_error(
        errc::invalid_config,
        "dynamic_embedding_columns: two fields name embedding '" + f.config.name + "'");
  }
  return ce::dense_ptr<float>{std::make_shared<dynamic_embedding>(s, std::move(fields), how)};
}

caf::expected<ce::dense_ptr<float>> dynamic_embedding_column(session& s, std::string key,
                                                             de_config config, ce::combiner how) {
  return dynamic_embedding_columns(s, {{std::move(key), nullptr, std::move(config)}}, how);
}

caf::expected<ce::dense_ptr<float>> dynamic_embedding_column(session& s, ce::categorical_ptr column,
                                                             de_config config, ce::combiner how) {
  if (!column)
    return make_error(errc::invalid_config, "dynamic_embedding_column: no categorical column");
  return dynamic_embedding_columns(s, {{{}, std::move(column), std::move(config)}}, how);
}

caf::error prefetch_rows(const ce::dense_ptr<float>& column, const ce::feature_map& features) {
  if (auto* dynamic = dynamic_cast<const dynamic_embedding*>(column.get()))
    return dynamic->prefetch(features);
  return {};
}

embedding_seconds embedding_seconds_of_this_thread() {
  return spent;
}

} // namespace darcy::ops::estimator
