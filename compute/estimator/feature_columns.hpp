// Feature columns of the Estimator: how parsed features become the dense input of a model.
// Categorical columns turn raw values into bucket ids (hash bucket, vocabulary, bucketized,
// crossed); dense columns give the input layer its columns (numeric, indicator, embedding and
// shared embedding, the last two trainable). The input layer concatenates dense columns.
//
//   auto words = categorical_column_with_hash_bucket("words", 1000);
//   input_layer<float> in{{numeric_column<float>("age"), embedding_column<float>(*words, 8)}};
//   auto x = in.forward(features);        // rows × in.width()
//   in.backward(dx);                      // adds to the embedding tables' gradients
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "compute/nn/tensor.hpp"
#include "messages/errc.hpp"

namespace darcy::compute::estimator {

/// One parsed feature of a batch: `width` numbers per row (row-major), or, for a categorical
/// feature, the strings of each row (width 0).
struct feature_value {
  std::vector<double> numbers;
  uint32_t width = 0;
  std::vector<std::vector<std::string>> strings;

  static feature_value numeric(std::vector<double> numbers, uint32_t width = 1);
  static feature_value categorical(std::vector<std::vector<std::string>> strings);
  /// Rows of the batch.
  size_t rows() const { return width > 0 ? numbers.size() / width : strings.size(); }
};

using feature_map = std::map<std::string, feature_value>;

/// The feature under `key`: strings when `width` is 0, else numbers of that width per row.
/// errc::invalid_argument naming the key for a missing feature or one of the other kind.
plain_expected<const feature_value*> find_feature(const feature_map& features,
                                                  const std::string& key, uint32_t width);

/// The bucket ids of every row of a batch; each id < buckets.
struct sparse_ids {
  std::vector<std::vector<uint64_t>> rows;
  uint64_t buckets = 0;
};

class categorical_column {
public:
  virtual ~categorical_column() = default;
  /// The column's name in errors and exports (the feature key, or keys joined by "_X_").
  virtual std::string name() const = 0;
  virtual uint64_t buckets() const = 0;
  /// errc::invalid_argument naming the key for a missing feature or one of the wrong kind.
  virtual plain_expected<sparse_ids> ids(const feature_map& features) const = 0;
  /// What rebuilds the column without the code that made it (an export's feature spec).
  virtual nlohmann::json spec() const = 0;
};

using categorical_ptr = std::shared_ptr<const categorical_column>;

/// hash(value) mod buckets. errc::invalid_config for buckets = 0.
plain_expected<categorical_ptr> categorical_column_with_hash_bucket(std::string key,
                                                                    uint64_t buckets);

/// The index of the value in `vocabulary`; a value not in it goes to one of `oov_buckets`
/// extra buckets by hash, or is dropped when there are none. errc::invalid_config for an empty
/// or duplicated vocabulary.
plain_expected<categorical_ptr> categorical_column_with_vocabulary_list(
  std::string key, std::vector<std::string> vocabulary, uint64_t oov_buckets = 0);

/// As the list, read from a file of one value per line. errc::not_found for a missing file,
/// errc::invalid_config for an empty one.
plain_expected<categorical_ptr> categorical_column_with_vocabulary_file(std::string key,
                                                                        const std::string& path,
                                                                        uint64_t oov_buckets = 0);

/// Element j of a numeric feature of width w falls in bucket b of `boundaries` (b = number of
/// boundaries ≤ value); its id is j · (boundaries + 1) + b. errc::invalid_config for
/// boundaries that are not finite and strictly increasing.
plain_expected<categorical_ptr> bucketized_column(std::string key, std::vector<double> boundaries,
                                                  uint32_t width = 1);

/// product: every combination of one id of each column. aligned: the i-th ids of every column
/// together, for sequence features (words × the next words gives bigrams); every column must
/// give each row the same number of ids, or ids() fails with errc::invalid_argument.
enum class cross_kind : uint8_t { product, aligned };

/// The crossed ids, hashed into `buckets`. errc::invalid_config for fewer than 2 columns or
/// buckets = 0.
plain_expected<categorical_ptr> crossed_column(std::vector<categorical_ptr> columns,
                                               uint64_t buckets,
                                               cross_kind kind = cross_kind::product);

template <class T>
class dense_column {
public:
  using matrix = nn::matrix_t<T>;
  virtual ~dense_column() = default;
  virtual std::string name() const = 0;
  virtual uint32_t width() const = 0;
  /// The column's rows × width() values; errc::invalid_argument for a missing or bad feature.
  virtual plain_expected<matrix> forward(const feature_map& features) = 0;
  /// Adds dL/d(parameters) for dL/d(output) of the last forward; nothing to do for columns
  /// without parameters. A column whose parameters live elsewhere (a service) may fail.
  virtual plain_error backward(const matrix& doutput) {
    (void)doutput;
    return {};
  }
  /// Training (the default) or inference: columns backed by a service read without keeping
  /// anything for a backward pass at inference.
  virtual void set_training(bool training) { (void)training; }
  virtual nn::parameter_list<T> parameters() { return {}; }
  /// Whether backward() does anything: it has parameters, here or in a service.
  virtual bool trainable() { return !parameters().empty(); }
  /// What rebuilds the column; trainable tables by name, their values travel separately.
  virtual nlohmann::json spec() const = 0;
};

template <class T>
using dense_ptr = std::shared_ptr<dense_column<T>>;

/// What a numeric column does to a value before it shifts and scales it. log1p: log(1 + v)
/// with negative values taken as 0, as DLRM feeds Criteo's counts to its bottom MLP.
enum class numeric_transform : uint8_t { none, log1p };

/// The feature's numbers, (transform(value) − shift) / scale. errc::invalid_config for width 0
/// or a scale that is 0 or not finite.
template <class T>
plain_expected<dense_ptr<T>> numeric_column(std::string key, uint32_t width = 1, double shift = 0,
                                            double scale = 1,
                                            numeric_transform transform = numeric_transform::none);

/// Multi-hot: how often each bucket occurs in the row.
template <class T>
dense_ptr<T> indicator_column(categorical_ptr column);

enum class combiner : uint8_t { sum, mean, sqrtn };

/// "sum", "mean" or "sqrtn", as specs write it.
std::string to_string(combiner how);

/// The weight of each of an example's `ids` rows: 1, 1/ids or 1/√ids; 0 for no ids.
double combiner_scale(combiner how, size_t ids);

/// A trainable table of buckets × dimension, rows combined per example; a row without ids
/// gives zeros. errc::invalid_config for dimension 0.
template <class T>
plain_expected<dense_ptr<T>> embedding_column(categorical_ptr column, uint32_t dimension,
                                              combiner how = combiner::mean, uint64_t seed = 1);

/// One table shared by several columns of the same bucket count: one dense column each, all
/// of whose gradients land in the same table. errc::invalid_config for no column, different
/// bucket counts or dimension 0.
template <class T>
plain_expected<std::vector<dense_ptr<T>>> shared_embedding_columns(
  std::vector<categorical_ptr> columns, uint32_t dimension, combiner how = combiner::mean,
  uint64_t seed = 1);

/// A categorical column from its spec(). errc::invalid_config for a spec no column wrote.
plain_expected<categorical_ptr> categorical_from_spec(const nlohmann::json& spec);

/// The combiner that to_string() names `name`; nullopt for any other name.
std::optional<combiner> combiner_named(const std::string& name);

/// Builds a column of a kind this layer does not know (one backed by a service) from its spec.
template <class T>
using column_resolver = std::function<plain_expected<dense_ptr<T>>(const nlohmann::json& spec)>;

/// Dense columns from their specs; embedding columns naming one table share it, and `tables`
/// (shared by every call for one model) holds the tables by name. A spec of another kind goes
/// to `other` when it is given, and is errc::invalid_config otherwise.
template <class T>
plain_expected<std::vector<dense_ptr<T>>> dense_from_spec(
  const nlohmann::json& specs, std::map<std::string, std::shared_ptr<nn::parameter<T>>>& tables,
  const column_resolver<T>& other = {});

/// The dense input of a model: its columns side by side, in order.
template <class T>
class input_layer {
public:
  using matrix = nn::matrix_t<T>;
  explicit input_layer(std::vector<dense_ptr<T>> columns);

  uint32_t width() const;
  /// errc::invalid_argument when a column fails or the columns disagree on the row count.
  plain_expected<matrix> forward(const feature_map& features);
  /// Precondition: dinput is rows × width() of the last successful forward. The first
  /// column's error, after every column had its part.
  plain_error backward(const matrix& dinput);
  void set_training(bool training);
  /// Whether any column is trainable (otherwise backward() need not run).
  bool trainable();
  /// Each shared table once.
  nn::parameter_list<T> parameters();
  /// The columns' specs, in order.
  nlohmann::json spec() const;

private:
  std::vector<dense_ptr<T>> columns_;
};

} // namespace darcy::compute::estimator
