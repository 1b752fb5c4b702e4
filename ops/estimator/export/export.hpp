// Exports of an Estimator's model, and the model loaded back without the code that trained
// it. An export is a numbered version under its root (the one checkpoint mechanism): the
// model's graph as traced from one predict call (layers, feature column specs, head), the
// weights by name and, for a model with dynamic embeddings, a snapshot of its embedding
// service. exported_model interprets the graph on those weights, its dynamic embeddings
// served by an in-process embedding service of its own.
//
//   auto version = export_model(trained, "exports/fashion", sample_input);   // "1", "2", ...
//   auto model = exported_model::load("exports/fashion");                   // the newest
//   auto probabilities = model->predict(batch);
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "compute/estimator/feature_columns.hpp"
#include "compute/estimator/heads.hpp"
#include "ops/estimator/estimator.hpp"
#include "ops/estimator/sampled_softmax_head.hpp"
#include "runtime/host_port.hpp"

namespace darcy::ops::estimator {

/// Traces e's model in predict mode on the first batch of `sample` and writes a new version
/// under `dir`, keeping the `keep` newest; returns its number. With run_config::embeddings,
/// the version holds a consistent snapshot of that service's tables. errc::invalid_argument
/// when the sample is empty or the model does not end in head_spec or a sampled_softmax_head.
caf::expected<std::string> export_model(estimator& e, const std::string& dir,
                                        const input_fn& sample, size_t keep = 5);

/// The service name in a dense sync's manifest.
inline constexpr const char* dense_sync_service = "estimator_dense_sync";

/// Writes e's dense variables (with their optimizer's state, for a resume) as the newest
/// version of `sync_dir`/dense, tagged with `step`,
/// keeping the 2 newest: the dense half of a training run's sync, which exported_model::follow
/// applies after the rows. io_error and the like, leaving the previous version current.
caf::error write_dense_sync(estimator& e, const std::string& sync_dir, int64_t step);

/// Loads the newest dense sync under `sync_dir` into e's variables, which must be built
/// (estimator::build), and its optimizer's state; returns its step. errc::not_found when there
/// is none; errc::dimension_mismatch, changing nothing, when it does not fit them.
caf::expected<int64_t> read_dense_sync(estimator& e, const std::string& sync_dir);

/// Whether the newest version under `dir` is an export of an Estimator (not of another kind of
/// model, such as a retrieval export).
bool is_estimator_export(const std::string& dir);

/// Where an exported model serves its dynamic embeddings.
struct embedding_placement {
  /// A running cluster's seed: the export's snapshot is loaded into shards on its members
  /// (`shards` on each, or on each of `nodes`), and lookups go from this process straight to
  /// those shards, once per shard for a batch. The snapshot's files and, on each follow(), the
  /// links they lack are sent to those members first (ops::restore and ops::sync): their hosts
  /// need no file system shared with this one. None: a service of the model's own in this
  /// process.
  std::optional<runtime::host_port> cluster;
  size_t shards = 1;
  std::vector<std::string> nodes;
  std::chrono::milliseconds timeout{5000};
  /// What the restore of the export's snapshot may take: it sends and loads every row. A
  /// follow()'s restore of a chain keeps `timeout` unless it is given a patience: a sync that
  /// serving waits for must not hold it up for long.
  std::chrono::milliseconds restore_timeout{std::chrono::minutes{10}};
};

/// The tables' checkpoint at `path` loaded into a session of their own where `where` says
/// (rows in memory, whatever training kept them in), their configs into `configs`: a serving
/// copy's tables. session::open's and ops::restore's errors.
caf::expected<std::unique_ptr<session>> open_serving_tables(const std::string& path,
                                                            const embedding_placement& where,
                                                            std::vector<de_config>& configs);

class exported_model {
public:
  /// Loads `version` (empty: the newest) of the exports under `dir`, its dynamic embeddings
  /// served where `where` says. errc::not_found for no export; errc::corrupt_file for damaged
  /// files; errc::invalid_config for a graph this build cannot run; errc::dimension_mismatch
  /// when the weights do not fit the graph; errc::node_unreachable for a cluster that does
  /// not answer.
  static caf::expected<std::unique_ptr<exported_model>> load(const std::string& dir,
                                                             const std::string& version = "",
                                                             const embedding_placement& where = {});

  /// Whether its dynamic embeddings live on a cluster's shards (not in this process).
  bool sharded_embeddings() const { return session_ && !session_->in_process(); }

  /// Where the model stands after follow().
  struct followed {
    /// The checkpoint of the chain its dynamic embeddings hold, and its step.
    std::string checkpoint;
    int64_t step = 0;
    /// Checkpoints applied by that call (a sync each, or the whole chain on a restore).
    size_t applied = 0;
    bool restored = false;
    /// The step of the dense weights it holds from the sync directory (-1: the export's).
    int64_t dense_step = -1;
  };

  /// Brings its dynamic embeddings to the current checkpoint of the incremental chain under
  /// `dir` (a training run's sync directory, ops::save with full_every): each delta since the
  /// one they hold is applied with ops::sync, or, when they hold none of that chain (or the
  /// service refuses a sync because an earlier one failed half way), the chain is restored. Then,
  /// when `dir`/dense holds newer dense weights (write_dense_sync), they replace the model's, all
  /// at once between two predictions. Predictions go on meanwhile, each shard answering with its
  /// rows before or after a sync, whole. One follow() at a time. errc::invalid_config for a model
  /// without dynamic embeddings; the checkpoint's errors, leaving the rows as they were when a sync
  /// or restore refuses (errc::corrupt_file, errc::not_found); errc::dimension_mismatch for dense
  /// weights that do not fit the graph, leaving the model's. A restore of the chain may take
  /// `restore_patience` (none: the placement's timeout, for a follow that serving waits for).
  caf::expected<followed> follow(const std::string& dir,
                                 std::optional<std::chrono::milliseconds> restore_patience = {});

  /// The head's predictions for `b` (labels are not needed). errc::invalid_argument for
  /// features the columns cannot read.
  caf::expected<matrix> predict(const batch& b);

  /// The labels a label head (sampled_softmax_head) predicts for each example of `b`, best
  /// first, as predict() scores them. errc::invalid_config for a model with another head.
  caf::expected<std::vector<std::vector<std::string>>> predict_labels(const batch& b);

  /// Both at once: the spec of one predict call (predictions, predicted_labels, export outputs).
  /// One call at a time runs; others wait.
  caf::expected<estimator_spec> predict_spec(const batch& b);

  const std::string& version() const { return version_; }

  /// The configs of the dynamic embeddings its snapshot holds (none for a model without).
  const std::vector<de_config>& embedding_tables() const { return embeddings_; }

private:
  exported_model() = default;
  /// Opens session_ where `where` says and restores the snapshot under `path` into it.
  caf::error open_embeddings(const std::string& path, const embedding_placement& where);
  /// The config of snapshot table `name`; errc::corrupt_file when it holds none.
  caf::expected<de_config> embedding_config(const std::string& name) const;

  /// Serves the snapshot of the model's dynamic embeddings; declared first so that the
  /// columns and the head that use it go before it.
  std::unique_ptr<session> session_;
  std::vector<de_config> embeddings_;
  /// Replaces the dense weights with the newest under `dir`/dense when they are newer than
  /// those it holds.
  caf::error follow_dense(const std::string& dir, followed& out);

  /// The chain checkpoint follow() last brought the embeddings to, and the dense version.
  std::string followed_;
  std::string dense_followed_;
  int64_t dense_step_ = -1;
  /// Held by a prediction, and by follow() while it replaces the dense weights.
  std::mutex predict_mutex_;
  std::string version_;
  nlohmann::json graph_;
  variable_store vars_;
  std::map<std::string, std::shared_ptr<compute::nn::parameter<float>>> tables_;
  /// One input layer per "input" op, in graph order.
  std::vector<std::unique_ptr<compute::estimator::input_layer<float>>> inputs_;
  std::unique_ptr<compute::estimator::head<float>> head_;
  std::shared_ptr<sampled_softmax_head> label_head_;
};

} // namespace darcy::ops::estimator
