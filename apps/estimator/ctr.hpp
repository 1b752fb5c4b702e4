// `darcy estimator ctr`: click-through prediction on Criteo-format files (real, or written by
// `darcy data ctr`) with DLRM or Wide & Deep on dynamic embeddings: one table per categorical
// field in the embedding service, keyed by the raw strings, no vocabulary and no hash bucket.
// It reports training examples/s and the test AUC beside the Bayes-optimal AUC when the test
// file has its generator's probabilities (F.probs).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "ops/ctr/ctr_stream.hpp"
#include "ops/estimator/estimator.hpp"
#include "ops/estimator/input.hpp"
#include "ops/online/online_trainer.hpp"
#include "ops/session.hpp"

namespace darcy::estimator_apps {

enum class ctr_model_kind : uint8_t { dlrm, wide_deep };

struct ctr_options {
  std::string train;
  std::string eval;
  ctr_model_kind model = ctr_model_kind::dlrm;
  size_t batch = 128;
  uint32_t epochs = 1;
  /// Train (evaluate) on the first rows of each file only (0: all).
  uint64_t train_rows = 0;
  uint64_t eval_rows = 0;
  uint32_t embedding_dim = 16;
  /// New rows start U(-a, a) with this a (0: 1/sqrt(embedding_dim)). DLRM's reference draws
  /// U(±sqrt(1/n)) for a field of n ids, tiny for the large fields; with no dictionary n is
  /// unknown, and a rare id keeps its start, so the start must be small: on 1M Kaggle-profile
  /// rows ±0.01 gave a test AUC of 0.8125 and ±1/sqrt(16) 0.7634.
  float embedding_init = 0.01f;
  /// DLRM's MLPs; the bottom one ends at embedding_dim.
  std::vector<uint32_t> bottom_units = {512, 256, 64, 16};
  std::vector<uint32_t> top_units = {512, 256};
  /// Wide & Deep's DNN.
  std::vector<uint32_t> hidden_units = {512, 256};
  /// The wide part's crosses, pairs of 0-based categorical fields. The defaults are the pairs
  /// `darcy data ctr`'s teacher crosses; on real data, pick your own.
  std::vector<std::pair<uint32_t, uint32_t>> crosses = {{0, 1}, {2, 5}, {3, 8}, {10, 13}};
  /// The dense variables' optimizer, and the embedding tables' (applied in the shards).
  optimizer_config dense_optimizer{.kind = optimizer_kind::adam, .learning_rate = 1e-3f};
  /// Of the tables: an optimizer kind, or a registered rule by name (`rule`), given
  /// learning_rate as its one parameter (table_optimizer).
  optimizer_config embedding_optimizer{.kind = optimizer_kind::adagrad, .learning_rate = 0.05f};
  bool skip_malformed = false;
  /// Where the tables' rows live: empty for the shards' memory; a directory for LevelDB
  /// databases under it (one per table and shard), each behind a memory tier.
  std::string leveldb_dir;
  /// With leveldb_dir: the bytes the memory tiers of all the model's tables (ctr_table_count)
  /// hold together, in equal shares of every table's `shards` databases.
  uint64_t memory_budget = uint64_t{4} << 30;
  /// Shards of every table in the in-process service. Each database (one per table and shard)
  /// gets memory_budget / ctr_table_count / shards, on a cluster too.
  uint32_t shards = 2;
  /// A key gets a row at its min_count-th sighting (1: at once), counted in a counting Bloom
  /// filter: ids seen once do not grow the table.
  uint32_t admission_min_count = 1;
  size_t threads = 2;
  /// Scheduler threads of the in-process embedding service, which run its shards.
  size_t service_threads = 1;
  uint64_t seed = 1;
  /// Batches read ahead of training whose keys go to the tables (ops::estimator::prefetch_rows)
  /// so that their rows come from disk into the memory tiers before their step; 0 (the
  /// default: on 2 cores it cost more than it saved, docs/ctr.md) reads ahead without it.
  /// Matters with leveldb_dir, in run_ctr and in a distributed job's workers (their keys go
  /// to the shards on the ps nodes).
  uint32_t prefetch_batches = 0;
  /// Seconds between the points of ctr_result::timeline.
  double timeline_every_s = 60;
  std::string model_dir;
  bool quiet = false;
};

/// "dlrm" or "wide-deep", and back (nullopt for another name).
std::string to_string(ctr_model_kind k);
std::optional<ctr_model_kind> ctr_model_named(const std::string& name);

/// errc::invalid_config naming the option: no training file, zero sizes, a bottom MLP that does
/// not end at embedding_dim, a cross of a field ≥ 26 or of a field with itself, a bad optimizer.
caf::error validate(const ctr_options& o);

/// The options as a distributed job's JSON and back; the parse keeps `defaults` for absent
/// fields and validates.
nlohmann::json ctr_job_options(const ctr_options& o);
caf::expected<ctr_options> parse_ctr_options(const nlohmann::json& j, ctr_options defaults = {});

/// What the tables of `o` are configured with: o.embedding_optimizer, and for a named rule its
/// learning_rate as the rule's parameter.
optimizer_config table_optimizer(const ctr_options& o);

/// Sets `cfg` to the optimizer kind named `name` or else to the rule of that name (a rule name:
/// compute::valid_rule_name); false, with `cfg` unchanged, for a name that is neither.
bool set_optimizer_named(optimizer_config& cfg, const std::string& name);

/// The tables of o's model: 26 for DLRM; for Wide & Deep 26 deep, 26 wide and one a cross.
size_t ctr_table_count(const ctr_options& o);

/// The (deep) embedding table of categorical field `field`.
de_config ctr_table(const ctr_options& o, size_t field);

/// Every table of o's model, ctr_table_count of them: the deep ones by field, then for Wide &
/// Deep the wide ones by field and the crosses' in o.crosses' order. Each has databases of its
/// own under o.leveldb_dir when that is set.
std::vector<de_config> ctr_tables(const ctr_options& o);

/// The model function; its tables live in `s`'s embedding service, which must outlive it.
/// `dynamic_columns`, when given, receives the model's columns of dynamic embeddings (for the
/// input's look-ahead).
caf::expected<ops::estimator::model_fn> ctr_model(
  const ctr_options& o, ops::session& s,
  std::vector<compute::estimator::dense_ptr<float>>* dynamic_columns = nullptr);

/// One point of ctr_result::timeline: totals since training began, so that the difference of
/// two points tells what a stretch of the run spent where.
struct timeline_point {
  double seconds = 0;
  uint64_t examples = 0;
  /// The training thread's seconds in the tables' lookups and updates
  /// (ops::estimator::embedding_seconds), and its CPU seconds.
  double lookup_s = 0;
  double update_s = 0;
  double thread_cpu_s = 0;
  /// The process's CPU seconds (all threads), and the machine's seconds stolen by a
  /// hypervisor and idle, summed over its cores.
  double process_cpu_s = 0;
  double machine_steal_s = 0;
  double machine_idle_s = 0;
};

/// {"seconds": ..., "examples": ..., ...}: the fields by their names.
void to_json(nlohmann::json& j, const timeline_point& p);

struct ctr_result {
  uint64_t train_examples = 0;
  uint64_t steps = 0;
  double train_seconds = 0;
  double examples_per_second = 0;
  /// On the test file; NaN without one.
  double auc = 0;
  double log_loss = 0;
  /// The AUC of the test file's true probabilities (F.probs); NaN when there is none.
  double bayes_auc = 0;
  /// Rows of every table after training: all of them, and those in memory (the memory tiers'
  /// with leveldb_dir); the memory tiers' hits and misses, rows the tiers' budget holds, and
  /// bytes on disk.
  uint64_t embedding_rows = 0;
  uint64_t cached_rows = 0;
  uint64_t cache_capacity = 0;
  uint64_t tier_hits = 0;
  uint64_t tier_misses = 0;
  /// Rows read from disk, and those of them the look-ahead read.
  uint64_t disk_reads = 0;
  uint64_t prefetched_rows = 0;
  uint64_t memory_tier_bytes = 0;
  uint64_t disk_bytes = 0;
  /// Rows evicted by the tables' policies (rows + evictions: every key that got a row).
  uint64_t evictions = 0;
  /// A point every o.timeline_every_s of training, and one at its end.
  std::vector<timeline_point> timeline;
  /// Training seconds by step phase (train_result::phase_seconds): the lookups are in
  /// "forward", the tables' updates in "backward".
  std::map<std::string, double> phase_seconds;
};

/// Trains on o.train (o.epochs passes) in an in-process embedding service, then evaluates on
/// o.eval when given. The files' errors as they come (file:line).
caf::expected<ctr_result> run_ctr(const ctr_options& o);

/// Online training on a stream (`darcy estimator ctr --stream SOURCE`): the CTR model and its
/// stream in ops/online's loop.
struct ctr_stream_run {
  /// open_ctr_stream's source: "generate", "-" or a file that may grow.
  std::string source;
  ops::ctr::ctr_stream_options stream;
  /// The loop: windows, syncs (their folder, periods and push target), the frozen export. Its
  /// batch and tables are the model's (run_ctr_stream sets them from ctr_options).
  ops::online::online_options online;
  /// How long to wait for a file to grow before looking again.
  std::chrono::milliseconds poll{100};
};

/// One window of a stream run.
using ctr_stream_window = ops::online::window_report;

/// Trains on run.source window by window in an in-process embedding service (ops::online's
/// run_online: each window evaluated, then trained on, synced and pushed as run.online says;
/// a rerun with the same sync folder resumes). `on_window` gets each window's figures, and an
/// error it returns ends the run with it.
caf::error run_ctr_stream(const ctr_options& o, const ctr_stream_run& run,
                          const std::function<caf::error(const ctr_stream_window&)>& on_window);

/// The AUC of `path`.probs against the labels of `path`'s first `rows` rows (0: all);
/// errc::not_found when there is no .probs file, errc::corrupt_file when it does not match the
/// rows.
caf::expected<double> ctr_bayes_auc(const std::string& path, uint64_t rows = 0);

} // namespace darcy::estimator_apps
