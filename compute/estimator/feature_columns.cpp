#include "compute/estimator/feature_columns.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "compute/hash.hpp"

namespace darcy::compute::estimator {

namespace {

plain_error bad_config(std::string what) {
  return {errc::invalid_config, "feature column: " + std::move(what)};
}

plain_error bad_feature(std::string what) {
  return {errc::invalid_argument, "feature column: " + std::move(what)};
}

class hash_bucket final : public categorical_column {
public:
  hash_bucket(std::string key, uint64_t buckets) : key_(std::move(key)), buckets_(buckets) {}
  std::string name() const override { return key_; }
  uint64_t buckets() const override { return buckets_; }
  plain_expected<sparse_ids> ids(const feature_map& features) const override {
    auto f = find_feature(features, key_, 0);
    if (!f)
      return f.error();
    sparse_ids out{{}, buckets_};
    for (auto& row : (*f)->strings) {
      auto& ids = out.rows.emplace_back();
      for (auto& s : row)
        ids.push_back(hash_key(s) % buckets_);
    }
    return out;
  }
  nlohmann::json spec() const override {
    return {{"kind", "hash"}, {"key", key_}, {"buckets", buckets_}};
  }

private:
  std::string key_;
  uint64_t buckets_;
};

class vocabulary final : public categorical_column {
public:
  vocabulary(std::string key, std::unordered_map<std::string, uint64_t> index, uint64_t oov)
    : key_(std::move(key)), index_(std::move(index)), oov_(oov) {}
  std::string name() const override { return key_; }
  uint64_t buckets() const override { return index_.size() + oov_; }
  plain_expected<sparse_ids> ids(const feature_map& features) const override {
    auto f = find_feature(features, key_, 0);
    if (!f)
      return f.error();
    sparse_ids out{{}, buckets()};
    for (auto& row : (*f)->strings) {
      auto& ids = out.rows.emplace_back();
      for (auto& s : row) {
        if (auto it = index_.find(s); it != index_.end())
          ids.push_back(it->second);
        else if (oov_ > 0)
          ids.push_back(index_.size() + hash_key(s) % oov_);
      }
    }
    return out;
  }
  nlohmann::json spec() const override {
    std::vector<std::string> words(index_.size());
    for (auto& [w, i] : index_)
      words[i] = w;
    return {{"kind", "vocabulary"}, {"key", key_}, {"words", words}, {"oov", oov_}};
  }

private:
  std::string key_;
  std::unordered_map<std::string, uint64_t> index_;
  uint64_t oov_;
};

class bucketized final : public categorical_column {
public:
  bucketized(std::string key, std::vector<double> boundaries, uint32_t width)
    : key_(std::move(key)), boundaries_(std::move(boundaries)), width_(width) {}
  std::string name() const override { return key_ + "_bucketized"; }
  uint64_t buckets() const override { return uint64_t{width_} * (boundaries_.size() + 1); }
  plain_expected<sparse_ids> ids(const feature_map& features) const override {
    auto f = find_feature(features, key_, width_);
    if (!f)
      return f.error();
    sparse_ids out{{}, buckets()};
    auto& numbers = (*f)->numbers;
    for (size_t r = 0; r < numbers.size() / width_; ++r) {
      auto& ids = out.rows.emplace_back();
      for (uint32_t j = 0; j < width_; ++j) {
        auto v = numbers[r * width_ + j];
        if (std::isnan(v))
          return bad_feature("'" + key_ + "' row " + std::to_string(r) + " is NaN");
        auto b = std::upper_bound(boundaries_.begin(), boundaries_.end(), v) - boundaries_.begin();
        ids.push_back(j * (boundaries_.size() + 1) + static_cast<uint64_t>(b));
      }
    }
    return out;
  }
  nlohmann::json spec() const override {
    return {{"kind", "bucketized"}, {"key", key_}, {"boundaries", boundaries_}, {"width", width_}};
  }

private:
  std::string key_;
  std::vector<double> boundaries_;
  uint32_t width_;
};

class crossed final : public categorical_column {
public:
  crossed(std::vector<categorical_ptr> columns, uint64_t buckets, cross_kind kind)
    : columns_(std::move(columns)), buckets_(buckets), kind_(kind) {
    for (auto& c : columns_)
      tags_.push_back(hash_key(c->name()));
  }
  std::string name() const override {
    std::string n;
    for (auto& c : columns_)
      n += (n.empty() ? "" : "_X_") + c->name();
    return n;
  }
  uint64_t buckets() const override { return buckets_; }
  plain_expected<sparse_ids> ids(const feature_map& features) const override {
    std::vector<sparse_ids> parts;
    for (auto& c : columns_) {
      auto ids = c->ids(features);
      if (!ids)
        return ids.error();
      if (!parts.empty() && ids->rows.size() != parts.front().rows.size())
        return bad_feature("the columns of " + name() + " differ in their row counts");
      parts.push_back(std::move(*ids));
    }
    sparse_ids out{{}, buckets_};
    for (size_t r = 0; r < parts.front().rows.size(); ++r) {
      auto hashes = kind_ == cross_kind::product ? product(parts, r) : aligned(parts, r);
      if (!hashes)
        return hashes.error();
      auto& ids = out.rows.emplace_back();
      for (auto h : *hashes)
        ids.push_back(h % buckets_);
    }
    return out;
  }
  nlohmann::json spec() const override {
    auto columns = nlohmann::json::array();
    for (auto& c : columns_)
      columns.push_back(c->spec());
    return {{"kind", "crossed"},
            {"columns", columns},
            {"buckets", buckets_},
            {"aligned", kind_ == cross_kind::aligned}};
  }

private:
  /// Each id is hashed tagged by its column's name, in column order.
  uint64_t tagged(uint64_t h, size_t c, uint64_t id) const { return mix64(h, mix64(tags_[c], id)); }

  /// The cartesian product of row r's ids.
  plain_expected<std::vector<uint64_t>> product(const std::vector<sparse_ids>& parts,
                                                size_t r) const {
    std::vector<uint64_t> hashes{cross_seed};
    for (size_t c = 0; c < parts.size(); ++c) {
      std::vector<uint64_t> next;
      for (auto h : hashes)
        for (auto id : parts[c].rows[r])
          next.push_back(tagged(h, c, id));
      hashes = std::move(next);
    }
    return hashes;
  }

  /// Row r's i-th ids of every column together, for each i.
  plain_expected<std::vector<uint64_t>> aligned(const std::vector<sparse_ids>& parts,
                                                size_t r) const {
    std::vector<uint64_t> hashes(parts.front().rows[r].size(), cross_seed);
    for (size_t c = 0; c < parts.size(); ++c) {
      auto& ids = parts[c].rows[r];
      if (ids.size() != hashes.size())
        return bad_feature("the aligned columns of " + name() + " give row " + std::to_string(r) +
                           " different numbers of ids");
      for (size_t i = 0; i < ids.size(); ++i)
        hashes[i] = tagged(hashes[i], c, ids[i]);
    }
    return hashes;
  }

  static constexpr uint64_t cross_seed = 0x9E3779B97F4A7C15ull;

  std::vector<categorical_ptr> columns_;
  std::vector<uint64_t> tags_;
  uint64_t buckets_;
  cross_kind kind_;
};

template <class T>
class numeric final : public dense_column<T> {
public:
  using matrix = nn::matrix_t<T>;
  numeric(std::string key, uint32_t width, double shift, double scale, numeric_transform t)
    : key_(std::move(key)), width_(width), shift_(shift), scale_(scale), transform_(t) {}
  std::string name() const override { return key_; }
  uint32_t width() const override { return width_; }
  plain_expected<matrix> forward(const feature_map& features) override {
    auto f = find_feature(features, key_, width_);
    if (!f)
      return f.error();
    auto& numbers = (*f)->numbers;
    matrix out(static_cast<Eigen::Index>(numbers.size() / width_), width_);
    for (size_t i = 0; i < numbers.size(); ++i) {
      if (!std::isfinite(numbers[i]))
        return bad_feature("'" + key_ + "' has a non-finite value in row " +
                           std::to_string(i / width_));
      auto v =
        transform_ == numeric_transform::log1p ? std::log1p(std::max(numbers[i], 0.0)) : numbers[i];
      out.data()[i] = static_cast<T>((v - shift_) / scale_);
    }
    return out;
  }
  nlohmann::json spec() const override {
    nlohmann::json out{
      {"kind", "numeric"}, {"key", key_}, {"width", width_}, {"shift", shift_}, {"scale", scale_}};
    if (transform_ == numeric_transform::log1p)
      out["transform"] = "log1p";
    return out;
  }

private:
  std::string key_;
  uint32_t width_;
  double shift_, scale_;
  numeric_transform transform_;
};

template <class T>
class indicator final : public dense_column<T> {
public:
  using matrix = nn::matrix_t<T>;
  explicit indicator(categorical_ptr column) : column_(std::move(column)) {}
  std::string name() const override { return column_->name() + "_indicator"; }
  uint32_t width() const override { return static_cast<uint32_t>(column_->buckets()); }
  plain_expected<matrix> forward(const feature_map& features) override {
    auto ids = column_->ids(features);
    if (!ids)
      return ids.error();
    matrix out = matrix::Zero(static_cast<Eigen::Index>(ids->rows.size()), width());
    for (size_t r = 0; r < ids->rows.size(); ++r)
      for (auto id : ids->rows[r])
        out(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(id)) += 1;
    return out;
  }
  nlohmann::json spec() const override {
    return {{"kind", "indicator"}, {"column", column_->spec()}};
  }

private:
  categorical_ptr column_;
};

template <class T>
class embedding final : public dense_column<T> {
public:
  using matrix = nn::matrix_t<T>;
  embedding(categorical_ptr column, std::shared_ptr<nn::parameter<T>> table, combiner how)
    : column_(std::move(column)), table_(std::move(table)), how_(how) {}
  std::string name() const override { return column_->name() + "_embedding"; }
  uint32_t width() const override { return static_cast<uint32_t>(table_->value.cols()); }
  plain_expected<matrix> forward(const feature_map& features) override {
    auto ids = column_->ids(features);
    if (!ids)
      return ids.error();
    ids_ = std::move(ids->rows);
    scales_.clear();
    matrix out = matrix::Zero(static_cast<Eigen::Index>(ids_.size()), width());
    for (size_t r = 0; r < ids_.size(); ++r) {
      scales_.push_back(static_cast<T>(combiner_scale(how_, ids_[r].size())));
      for (auto id : ids_[r])
        out.row(static_cast<Eigen::Index>(r)) += scales_.back() * table_->value.row(id);
    }
    return out;
  }
  plain_error backward(const matrix& doutput) override {
    for (size_t r = 0; r < ids_.size(); ++r)
      for (auto id : ids_[r])
        table_->grad.row(id) += scales_[r] * doutput.row(static_cast<Eigen::Index>(r));
    return {};
  }
  nn::parameter_list<T> parameters() override { return {table_.get()}; }
  nlohmann::json spec() const override {
    return {{"kind", "embedding"},
            {"column", column_->spec()},
            {"table", table_->name},
            {"dimension", width()},
            {"combiner", to_string(how_)}};
  }

private:
  categorical_ptr column_;
  std::shared_ptr<nn::parameter<T>> table_;
  combiner how_;
  std::vector<std::vector<uint64_t>> ids_;
  std::vector<T> scales_;
};

template <class T>
std::shared_ptr<nn::parameter<T>> make_table(const std::string& name, uint64_t buckets,
                                             uint32_t dimension, uint64_t seed) {
  // Normal with standard deviation 1/√dimension, as TensorFlow's embedding_column.
  std::mt19937_64 rng{seed};
  std::normal_distribution<double> draw{0.0, 1.0 / std::sqrt(double(dimension))};
  nn::matrix_t<T> value(static_cast<Eigen::Index>(buckets), dimension);
  for (Eigen::Index i = 0; i < value.size(); ++i)
    value.data()[i] = static_cast<T>(draw(rng));
  return std::make_shared<nn::parameter<T>>(name, std::move(value));
}

plain_expected<categorical_ptr> make_vocabulary(std::string key, std::vector<std::string> words,
                                                uint64_t oov) {
  if (words.empty())
    return bad_config("the vocabulary of '" + key + "' is empty");
  std::unordered_map<std::string, uint64_t> index;
  for (auto& w : words)
    if (!index.emplace(w, index.size()).second)
      return bad_config("the vocabulary of '" + key + "' lists '" + w + "' twice");
  return categorical_ptr{std::make_shared<vocabulary>(std::move(key), std::move(index), oov)};
}

plain_error bad_spec(const std::string& what) {
  return bad_config("bad spec: " + what);
}

} // namespace

plain_expected<const feature_value*> find_feature(const feature_map& features,
                                                  const std::string& key, uint32_t width) {
  auto it = features.find(key);
  if (it == features.end())
    return bad_feature("no feature '" + key + "' in the batch");
  auto& f = it->second;
  if (width == 0 && f.width != 0)
    return bad_feature("'" + key + "' is numeric, the column needs strings");
  if (width != 0 && f.width != width)
    return bad_feature(
      "'" + key + "' has " +
      (f.width == 0 ? std::string{"strings"} : std::to_string(f.width) + " numbers per row") +
      ", the column needs " + std::to_string(width) + " numbers per row");
  if (width != 0 && f.numbers.size() % width != 0)
    return bad_feature("'" + key + "' has a partial last row");
  return &f;
}

std::string to_string(combiner how) {
  switch (how) {
    case combiner::sum:
      return "sum";
    case combiner::mean:
      return "mean";
    case combiner::sqrtn:
      return "sqrtn";
  }
  return "?";
}

double combiner_scale(combiner how, size_t ids) {
  if (ids == 0)
    return 0;
  auto n = static_cast<double>(ids);
  return how == combiner::sum ? 1.0 : how == combiner::mean ? 1.0 / n : 1.0 / std::sqrt(n);
}

plain_expected<categorical_ptr> categorical_from_spec(const nlohmann::json& spec) {
  try {
    auto kind = spec.at("kind").get<std::string>();
    if (kind == "hash")
      return categorical_column_with_hash_bucket(spec.at("key"), spec.at("buckets"));
    if (kind == "vocabulary")
      return categorical_column_with_vocabulary_list(spec.at("key"), spec.at("words"),
                                                     spec.at("oov"));
    if (kind == "bucketized")
      return bucketized_column(spec.at("key"), spec.at("boundaries"), spec.at("width"));
    if (kind == "crossed") {
      std::vector<categorical_ptr> columns;
      for (auto& c : spec.at("columns")) {
        auto column = categorical_from_spec(c);
        if (!column)
          return column.error();
        columns.push_back(*column);
      }
      return crossed_column(
        std::move(columns), spec.at("buckets"),
        spec.value("aligned", false) ? cross_kind::aligned : cross_kind::product);
    }
    return bad_spec("unknown categorical column kind '" + kind + "'");
  } catch (const nlohmann::json::exception& e) {
    return bad_spec(e.what());
  }
}

std::optional<combiner> combiner_named(const std::string& name) {
  for (auto c : {combiner::sum, combiner::mean, combiner::sqrtn})
    if (to_string(c) == name)
      return c;
  return std::nullopt;
}

template <class T>
plain_expected<std::vector<dense_ptr<T>>> dense_from_spec(
  const nlohmann::json& specs, std::map<std::string, std::shared_ptr<nn::parameter<T>>>& tables,
  const column_resolver<T>& other) {
  std::vector<dense_ptr<T>> out;
  try {
    for (auto& spec : specs) {
      auto kind = spec.at("kind").get<std::string>();
      if (kind == "numeric") {
        auto transform = spec.value("transform", std::string{"none"});
        if (transform != "none" && transform != "log1p")
          return bad_spec("unknown numeric transform '" + transform + "'");
        auto c = numeric_column<T>(
          spec.at("key"), spec.at("width"), spec.at("shift"), spec.at("scale"),
          transform == "log1p" ? numeric_transform::log1p : numeric_transform::none);
        if (!c)
          return c.error();
        out.push_back(*c);
        continue;
      }
      if (kind != "indicator" && kind != "embedding") {
        if (!other)
          return bad_spec("unknown dense column kind '" + kind + "'");
        auto c = other(spec);
        if (!c)
          return c.error();
        out.push_back(*c);
        continue;
      }
      auto column = categorical_from_spec(spec.at("column"));
      if (!column)
        return column.error();
      if (kind == "indicator") {
        out.push_back(indicator_column<T>(*column));
        continue;
      }
      auto name = spec.at("table").get<std::string>();
      uint32_t dimension = spec.at("dimension");
      auto name_of_how = spec.at("combiner").get<std::string>();
      auto how = combiner_named(name_of_how);
      if (!how)
        return bad_spec("unknown combiner '" + name_of_how + "'");
      auto& table = tables[name];
      if (!table)
        table = make_table<T>(name, (*column)->buckets(), dimension, 0);
      if (table->value.rows() != static_cast<Eigen::Index>((*column)->buckets()) ||
          table->value.cols() != dimension)
        return bad_spec("table '" + name + "' is used with two shapes");
      out.push_back(std::make_shared<embedding<T>>(*column, table, *how));
    }
  } catch (const nlohmann::json::exception& e) {
    return bad_spec(e.what());
  }
  return out;
}

feature_value feature_value::numeric(std::vector<double> numbers, uint32_t width) {
  return {std::move(numbers), width, {}};
}

feature_value feature_value::categorical(std::vector<std::vector<std::string>> strings) {
  return {{}, 0, std::move(strings)};
}

plain_expected<categorical_ptr> categorical_column_with_hash_bucket(std::string key,
                                                                    uint64_t buckets) {
  if (buckets == 0)
    return bad_config("'" + key + "' needs at least one hash bucket");
  return categorical_ptr{std::make_shared<hash_bucket>(std::move(key), buckets)};
}

plain_expected<categorical_ptr> categorical_column_with_vocabulary_list(
  std::string key, std::vector<std::string> words, uint64_t oov_buckets) {
  return make_vocabulary(std::move(key), std::move(words), oov_buckets);
}

plain_expected<categorical_ptr> categorical_column_with_vocabulary_file(std::string key,
                                                                        const std::string& path,
                                                                        uint64_t oov_buckets) {
  std::ifstream in{path};
  if (!in)
    return plain_error{errc::not_found, "feature column: no vocabulary file " + path};
  std::vector<std::string> words;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (!line.empty())
      words.push_back(line);
  }
  return make_vocabulary(std::move(key), std::move(words), oov_buckets);
}

plain_expected<categorical_ptr> bucketized_column(std::string key, std::vector<double> boundaries,
                                                  uint32_t width) {
  if (width == 0)
    return bad_config("'" + key + "' needs width >= 1");
  for (size_t i = 0; i < boundaries.size(); ++i)
    if (!std::isfinite(boundaries[i]) || (i > 0 && boundaries[i] <= boundaries[i - 1]))
      return bad_config("the boundaries of '" + key + "' must be finite and strictly increasing");
  return categorical_ptr{
    std::make_shared<bucketized>(std::move(key), std::move(boundaries), width)};
}

plain_expected<categorical_ptr> crossed_column(std::vector<categorical_ptr> columns,
                                               uint64_t buckets, cross_kind kind) {
  if (columns.size() < 2)
    return bad_config("a crossed column needs at least 2 columns");
  if (buckets == 0)
    return bad_config("a crossed column needs at least one hash bucket");
  return categorical_ptr{std::make_shared<crossed>(std::move(columns), buckets, kind)};
}

template <class T>
plain_expected<dense_ptr<T>> numeric_column(std::string key, uint32_t width, double shift,
                                            double scale, numeric_transform transform) {
  if (width == 0)
    return bad_config("'" + key + "' needs width >= 1");
  if (!std::isfinite(shift) || !std::isfinite(scale) || scale == 0)
    return bad_config("'" + key + "' needs a finite shift and a finite, non-zero scale");
  return dense_ptr<T>{std::make_shared<numeric<T>>(std::move(key), width, shift, scale, transform)};
}

template <class T>
dense_ptr<T> indicator_column(categorical_ptr column) {
  return std::make_shared<indicator<T>>(std::move(column));
}

template <class T>
plain_expected<dense_ptr<T>> embedding_column(categorical_ptr column, uint32_t dimension,
                                              combiner how, uint64_t seed) {
  auto columns = shared_embedding_columns<T>({std::move(column)}, dimension, how, seed);
  if (!columns)
    return columns.error();
  return columns->front();
}

template <class T>
plain_expected<std::vector<dense_ptr<T>>> shared_embedding_columns(
  std::vector<categorical_ptr> columns, uint32_t dimension, combiner how, uint64_t seed) {
  if (columns.empty())
    return bad_config("an embedding needs at least one categorical column");
  if (dimension == 0)
    return bad_config("the embedding of '" + columns.front()->name() + "' needs dimension >= 1");
  auto buckets = columns.front()->buckets();
  std::string name;
  for (auto& c : columns) {
    if (c->buckets() != buckets)
      return bad_config("shared embedding columns need one bucket count: '" +
                        columns.front()->name() + "' has " + std::to_string(buckets) + ", '" +
                        c->name() + "' has " + std::to_string(c->buckets()));
    name += (name.empty() ? "" : "_") + c->name();
  }
  auto table = make_table<T>(name + "_embedding", buckets, dimension, seed);
  std::vector<dense_ptr<T>> out;
  for (auto& c : columns)
    out.push_back(std::make_shared<embedding<T>>(c, table, how));
  return out;
}

template <class T>
input_layer<T>::input_layer(std::vector<dense_ptr<T>> columns) : columns_(std::move(columns)) {
}

template <class T>
uint32_t input_layer<T>::width() const {
  uint32_t w = 0;
  for (auto& c : columns_)
    w += c->width();
  return w;
}

template <class T>
auto input_layer<T>::forward(const feature_map& features) -> plain_expected<matrix> {
  std::vector<matrix> parts;
  for (auto& c : columns_) {
    auto part = c->forward(features);
    if (!part)
      return part.error();
    if (!parts.empty() && part->rows() != parts.front().rows())
      return bad_feature("'" + c->name() + "' has " + std::to_string(part->rows()) + " rows, '" +
                         columns_.front()->name() + "' has " +
                         std::to_string(parts.front().rows()));
    parts.push_back(std::move(*part));
  }
  matrix out(parts.empty() ? 0 : parts.front().rows(), width());
  Eigen::Index at = 0;
  for (auto& p : parts) {
    out.middleCols(at, p.cols()) = p;
    at += p.cols();
  }
  return out;
}

template <class T>
plain_error input_layer<T>::backward(const matrix& dinput) {
  Eigen::Index at = 0;
  plain_error first;
  for (auto& c : columns_) {
    if (auto err = c->backward(dinput.middleCols(at, c->width())); err && !first)
      first = std::move(err);
    at += c->width();
  }
  return first;
}

template <class T>
bool input_layer<T>::trainable() {
  return std::any_of(columns_.begin(), columns_.end(), [](auto& c) { return c->trainable(); });
}

template <class T>
void input_layer<T>::set_training(bool training) {
  for (auto& c : columns_)
    c->set_training(training);
}

template <class T>
nlohmann::json input_layer<T>::spec() const {
  auto out = nlohmann::json::array();
  for (auto& c : columns_)
    out.push_back(c->spec());
  return out;
}

template <class T>
nn::parameter_list<T> input_layer<T>::parameters() {
  nn::parameter_list<T> all;
  for (auto& c : columns_)
    for (auto* p : c->parameters())
      if (std::find(all.begin(), all.end(), p) == all.end())
        all.push_back(p);
  return all;
}

#define DARCY_FEATURE_COLUMNS(T)                                                                 \
  template plain_expected<dense_ptr<T>> numeric_column<T>(std::string, uint32_t, double, double, \
                                                          numeric_transform);                    \
  template dense_ptr<T> indicator_column<T>(categorical_ptr);                                    \
  template plain_expected<dense_ptr<T>> embedding_column<T>(categorical_ptr, uint32_t, combiner, \
                                                            uint64_t);                           \
  template plain_expected<std::vector<dense_ptr<T>>> shared_embedding_columns<T>(                \
    std::vector<categorical_ptr>, uint32_t, combiner, uint64_t);                                 \
  template plain_expected<std::vector<dense_ptr<T>>> dense_from_spec<T>(                         \
    const nlohmann::json&, std::map<std::string, std::shared_ptr<nn::parameter<T>>>&,            \
    const column_resolver<T>&);                                                                  \
  template class input_layer<T>;
DARCY_FEATURE_COLUMNS(float)
DARCY_FEATURE_COLUMNS(double)
#undef DARCY_FEATURE_COLUMNS

} // namespace darcy::compute::estimator
