#include "apps/estimator/ctr.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>

#include "apps/progress/progress_hook.hpp"
#include "compute/ctr_synthetic.hpp"
#include "compute/estimator/metrics.hpp"
#include "compute/rules/bound_rule.hpp"
#include "compute/rules/rule_registry.hpp"
#include "messages/error.hpp"
#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_row_stream.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/embedding_totals.hpp"
#include "ops/estimator/canned.hpp"
#include "ops/estimator/dynamic_embedding_column.hpp"
#include "runtime/process/machine.hpp"
#include "stores/data/ctr_file.hpp"

namespace darcy::estimator_apps {

namespace est = ops::estimator;
namespace ce = compute::estimator;
using compute::ctr_cat_fields;
using compute::ctr_int_fields;

void to_json(nlohmann::json& j, const timeline_point& p) {
  j = {{"seconds", p.seconds},
       {"examples", p.examples},
       {"lookup_s", p.lookup_s},
       {"update_s", p.update_s},
       {"thread_cpu_s", p.thread_cpu_s},
       {"process_cpu_s", p.process_cpu_s},
       {"machine_steal_s", p.machine_steal_s},
       {"machine_idle_s", p.machine_idle_s}};
}

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

caf::error bad(const std::string& what) {
  return make_error(errc::invalid_config, "ctr: " + what);
}

caf::error check_units(const std::vector<uint32_t>& units, const char* what) {
  if (units.empty())
    return bad(std::string{what} + " needs at least one layer");
  for (auto u : units)
    if (u == 0)
      return bad(std::string{what} + " has a layer of 0 units");
  return {};
}

/// Puts table `c` where o says the rows live: with o.leveldb_dir, in LevelDB databases of its
/// own under it (one a shard, named by the table) behind an equal share of o.memory_budget;
/// and behind o's admission.
de_config placed(const ctr_options& o, de_config c) {
  if (!o.leveldb_dir.empty()) {
    c.backend = backend_kind::leveldb;
    c.path = o.leveldb_dir + "/" + c.name;
    c.cache_bytes = std::max<uint64_t>(1, o.memory_budget / ctr_table_count(o) / o.shards);
  }
  if (o.admission_min_count > 1)
    c.admission = {.kind = admission_kind::bloom, .min_count = o.admission_min_count};
  return c;
}

/// The table of the wide part's weights of field `field` (one weight per id).
de_config wide_table(const ctr_options& o, size_t field) {
  de_config c{.name = "ctr_wide_" + ops::ctr::ctr_field_key(field), .dim = 1};
  c.optimizer = table_optimizer(o);
  c.init = {.kind = init_kind::zeros, .seed = o.seed};
  return placed(o, std::move(c));
}

/// The table of a wide part's cross of fields a and b (one weight per crossed id).
de_config cross_table(const ctr_options& o, uint32_t a, uint32_t b) {
  de_config c{.name = "ctr_X" + std::to_string(a + 1) + "_" + std::to_string(b + 1), .dim = 1};
  c.optimizer = table_optimizer(o);
  c.init = {.kind = init_kind::zeros, .seed = o.seed};
  return placed(o, std::move(c));
}

/// Every categorical field as a field of a dynamic-embedding group, its table from `table`.
std::vector<est::dynamic_field> categorical_fields(const std::function<de_config(size_t)>& table) {
  std::vector<est::dynamic_field> out;
  for (size_t f = 0; f < ctr_cat_fields; ++f)
    out.push_back({ops::ctr::ctr_field_key(f), nullptr, table(f)});
  return out;
}

} // namespace

std::string to_string(ctr_model_kind k) {
  return k == ctr_model_kind::wide_deep ? "wide-deep" : "dlrm";
}

std::optional<ctr_model_kind> ctr_model_named(const std::string& name) {
  if (name == "dlrm")
    return ctr_model_kind::dlrm;
  if (name == "wide-deep")
    return ctr_model_kind::wide_deep;
  return std::nullopt;
}

caf::error validate(const ctr_options& o) {
  if (o.train.empty())
    return bad("a training file is needed");
  if (!(o.embedding_init >= 0) || !std::isfinite(o.embedding_init))
    return bad("embedding_init must be a finite number >= 0");
  if (o.batch == 0 || o.embedding_dim == 0 || o.threads == 0 || o.service_threads == 0)
    return bad("batch, embedding_dim, threads and service_threads must be > 0");
  if (auto err = check_units(o.bottom_units, "the bottom MLP"))
    return err;
  if (auto err = check_units(o.top_units, "the top MLP"))
    return err;
  if (auto err = check_units(o.hidden_units, "the DNN"))
    return err;
  if (o.model == ctr_model_kind::dlrm && o.bottom_units.back() != o.embedding_dim)
    return bad("the bottom MLP must end at embedding_dim (" + std::to_string(o.embedding_dim) +
               "), not " + std::to_string(o.bottom_units.back()));
  for (auto [a, b] : o.crosses)
    if (a >= ctr_cat_fields || b >= ctr_cat_fields || a == b)
      return bad("a cross of fields " + std::to_string(a) + " and " + std::to_string(b) +
                 " (two different fields of 0 … 25)");
  if (o.shards == 0)
    return bad("shards must be > 0");
  if (!o.leveldb_dir.empty() && o.memory_budget == 0)
    return bad("memory_budget must be > 0");
  if (o.admission_min_count == 0)
    return bad("admission_min_count must be >= 1");
  if (auto err = compute::validate(o.dense_optimizer))
    return bad(err.context);
  auto rule = compute::bind_rule(table_optimizer(o), std::max<uint32_t>(o.embedding_dim, 1),
                                 compute::rule_registry::global());
  if (!rule)
    return bad("embedding_optimizer: " + render(rule.error()));
  return {};
}

nlohmann::json ctr_job_options(const ctr_options& o) {
  auto crosses = nlohmann::json::array();
  for (auto [a, b] : o.crosses)
    crosses.push_back({a, b});
  return {{"train", o.train},
          {"eval", o.eval},
          {"model", to_string(o.model)},
          {"batch", o.batch},
          {"train_rows", o.train_rows},
          {"eval_rows", o.eval_rows},
          {"embedding_dim", o.embedding_dim},
          {"embedding_init", o.embedding_init},
          {"bottom", o.bottom_units},
          {"top", o.top_units},
          {"hidden", o.hidden_units},
          {"crosses", crosses},
          {"dense_optimizer", to_string(o.dense_optimizer.kind)},
          {"learning_rate", o.dense_optimizer.learning_rate},
          {"embedding_optimizer", o.embedding_optimizer.rule.empty()
                                    ? to_string(o.embedding_optimizer.kind)
                                    : o.embedding_optimizer.rule},
          {"embedding_learning_rate", o.embedding_optimizer.learning_rate},
          {"skip_malformed", o.skip_malformed},
          {"leveldb_dir", o.leveldb_dir},
          {"memory_budget", o.memory_budget},
          {"shards", o.shards},
          {"admission_min_count", o.admission_min_count},
          {"prefetch_batches", o.prefetch_batches},
          {"threads", o.threads},
          {"seed", o.seed}};
}

caf::expected<ctr_options> parse_ctr_options(const nlohmann::json& j, ctr_options o) {
  try {
    o.train = j.value("train", o.train);
    o.eval = j.value("eval", o.eval);
    if (j.contains("model")) {
      auto kind = ctr_model_named(j.at("model").get<std::string>());
      if (!kind)
        return bad("model must be dlrm or wide-deep");
      o.model = *kind;
    }
    o.batch = j.value("batch", o.batch);
    o.train_rows = j.value("train_rows", o.train_rows);
    o.eval_rows = j.value("eval_rows", o.eval_rows);
    o.embedding_dim = j.value("embedding_dim", o.embedding_dim);
    o.embedding_init = j.value("embedding_init", o.embedding_init);
    o.bottom_units = j.value("bottom", o.bottom_units);
    o.top_units = j.value("top", o.top_units);
    o.hidden_units = j.value("hidden", o.hidden_units);
    if (j.contains("crosses")) {
      o.crosses.clear();
      for (auto& pair : j.at("crosses"))
        o.crosses.emplace_back(pair.at(0).get<uint32_t>(), pair.at(1).get<uint32_t>());
    }
    if (j.contains("dense_optimizer")) {
      auto kind = optimizer_kind_named(j.at("dense_optimizer").get<std::string>());
      if (!kind)
        return bad("dense_optimizer: unknown optimizer " + j.at("dense_optimizer").dump());
      o.dense_optimizer.kind = *kind;
    }
    if (j.contains("embedding_optimizer") &&
        !set_optimizer_named(o.embedding_optimizer, j.at("embedding_optimizer").get<std::string>()))
      return bad("embedding_optimizer: unknown optimizer " + j.at("embedding_optimizer").dump());
    o.dense_optimizer.learning_rate = j.value("learning_rate", o.dense_optimizer.learning_rate);
    o.embedding_optimizer.learning_rate =
      j.value("embedding_learning_rate", o.embedding_optimizer.learning_rate);
    o.skip_malformed = j.value("skip_malformed", o.skip_malformed);
    o.leveldb_dir = j.value("leveldb_dir", o.leveldb_dir);
    o.memory_budget = j.value("memory_budget", o.memory_budget);
    o.shards = j.value("shards", o.shards);
    o.admission_min_count = j.value("admission_min_count", o.admission_min_count);
    o.prefetch_batches = j.value("prefetch_batches", o.prefetch_batches);
    o.threads = j.value("threads", o.threads);
    o.seed = j.value("seed", o.seed);
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string{"job options: "} + e.what());
  }
  if (auto err = validate(o))
    return err;
  return o;
}

optimizer_config table_optimizer(const ctr_options& o) {
  auto cfg = o.embedding_optimizer;
  if (!cfg.rule.empty())
    cfg.params = {{"learning_rate", cfg.learning_rate}};
  return cfg;
}

bool set_optimizer_named(optimizer_config& cfg, const std::string& name) {
  if (auto kind = optimizer_kind_named(name)) {
    cfg.kind = *kind;
    cfg.rule.clear();
    return true;
  }
  if (!compute::valid_rule_name(name))
    return false;
  cfg.rule = name;
  return true;
}

size_t ctr_table_count(const ctr_options& o) {
  return o.model == ctr_model_kind::dlrm ? ctr_cat_fields : 2 * ctr_cat_fields + o.crosses.size();
}

de_config ctr_table(const ctr_options& o, size_t field) {
  de_config c{.name = "ctr_" + ops::ctr::ctr_field_key(field), .dim = o.embedding_dim};
  c.optimizer = table_optimizer(o);
  auto a =
    o.embedding_init > 0 ? o.embedding_init : 1.0f / std::sqrt(static_cast<float>(o.embedding_dim));
  c.init = {.kind = init_kind::uniform, .low = -a, .high = a, .seed = o.seed + field};
  return placed(o, std::move(c));
}

std::vector<de_config> ctr_tables(const ctr_options& o) {
  std::vector<de_config> out;
  for (size_t f = 0; f < ctr_cat_fields; ++f)
    out.push_back(ctr_table(o, f));
  if (o.model == ctr_model_kind::dlrm)
    return out;
  for (size_t f = 0; f < ctr_cat_fields; ++f)
    out.push_back(wide_table(o, f));
  for (auto [a, b] : o.crosses)
    out.push_back(cross_table(o, a, b));
  return out;
}

caf::expected<est::model_fn> ctr_model(const ctr_options& o, ops::session& s,
                                       std::vector<ce::dense_ptr<float>>* dynamic_columns) {
  if (auto err = validate(o))
    return err;
  auto ints = ce::numeric_column<float>(ops::ctr::ctr_ints_key, ctr_int_fields, 0, 1,
                                        ce::numeric_transform::log1p);
  if (!ints)
    return make_error(ints.error());
  // Every table is looked up in one request a step (26 round trips would be the step's cost
  // on a cluster).
  auto deep = est::dynamic_embedding_columns(
    s, categorical_fields([&](size_t f) { return ctr_table(o, f); }), ce::combiner::sum);
  if (!deep)
    return std::move(deep.error());
  if (dynamic_columns)
    dynamic_columns->push_back(*deep);
  if (o.model == ctr_model_kind::dlrm) {
    est::dlrm_options d;
    d.dense_columns = {*ints};
    d.embedding_columns = {*deep};
    d.bottom_units = o.bottom_units;
    d.top_units = o.top_units;
    return est::dlrm_classifier(std::move(d));
  }
  // Wide & Deep: the deep part sees the counts and every field's embedding; the wide part a
  // weight per id of every field and per crossed id of each cross.
  auto wide_fields = categorical_fields([&](size_t f) { return wide_table(o, f); });
  for (auto [a, b] : o.crosses) {
    // The cross's ids are the pair's hash over all 64 bits: the dynamic table has no buckets
    // to fill, only rows for the pairs that occur.
    auto ca = ce::categorical_column_with_hash_bucket(ops::ctr::ctr_field_key(a), ~uint64_t{0});
    auto cb = ce::categorical_column_with_hash_bucket(ops::ctr::ctr_field_key(b), ~uint64_t{0});
    if (!ca || !cb)
      return make_error(ca ? cb.error() : ca.error());
    auto crossed = ce::crossed_column({*ca, *cb}, ~uint64_t{0});
    if (!crossed)
      return make_error(crossed.error());
    wide_fields.push_back({{}, *crossed, cross_table(o, a, b)});
  }
  auto wide = est::dynamic_embedding_columns(s, std::move(wide_fields), ce::combiner::sum);
  if (!wide)
    return std::move(wide.error());
  if (dynamic_columns)
    dynamic_columns->push_back(*wide);
  return est::dnn_linear_combined_model({.columns = {*ints, *deep},
                                         .hidden_units = o.hidden_units,
                                         .linear_columns = {*wide},
                                         .head = {.kind = ce::head_kind::binary}});
}

caf::expected<double> ctr_bayes_auc(const std::string& path, uint64_t rows) {
  std::ifstream probs{path + ".probs"};
  if (!probs)
    return make_error(errc::not_found, path + ".probs: no such file");
  auto reader = stores::ctr_reader::open(path);
  if (!reader)
    return std::move(reader.error());
  auto auc = *ce::streaming_metric::make(ce::metric_kind::auc_roc);
  stores::ctr_row row;
  std::vector<double> p(1), y(1);
  for (uint64_t n = 0; rows == 0 || n < rows; ++n) {
    auto got = (*reader)->next(row);
    if (!got)
      return std::move(got.error());
    if (!*got)
      break;
    if (!(probs >> p[0]))
      return make_error(errc::corrupt_file,
                        path + ".probs: fewer probabilities than the file's rows");
    y[0] = row.label ? 1.0 : 0.0;
    if (auto err = auc.update({p, y}))
      return make_error(err);
  }
  return auc.value();
}

namespace {

/// Records a timeline_point every `every` seconds and at the end, on the training thread.
class timeline_hook final : public est::session_run_hook {
public:
  timeline_hook(double every, std::vector<timeline_point>& points)
    : every_(every), points_(points) {}
  caf::error begin(est::estimator&, uint64_t) override {
    start_ = point_now(0);
    return {};
  }
  caf::expected<est::hook_action> after_step(est::estimator&, const est::step_result& r) override {
    examples_ += r.examples;
    last_ = r.seconds;
    if (r.seconds >= next_) {
      points_.push_back(point_now(r.seconds));
      next_ = r.seconds + every_;
    }
    return est::hook_action::go_on;
  }
  caf::error end(est::estimator&, uint64_t) override {
    if (points_.empty() || points_.back().examples != examples_)
      points_.push_back(point_now(last_));
    return {};
  }

private:
  /// The totals now, less those at begin.
  timeline_point point_now(double seconds) const {
    auto tables = est::embedding_seconds_of_this_thread();
    auto machine = runtime::machine_cpu_times();
    return {.seconds = seconds,
            .examples = examples_,
            .lookup_s = tables.lookup - start_.lookup_s,
            .update_s = tables.backward - start_.update_s,
            .thread_cpu_s = runtime::thread_cpu_seconds() - start_.thread_cpu_s,
            .process_cpu_s = runtime::process_cpu_seconds() - start_.process_cpu_s,
            .machine_steal_s = machine.steal - start_.machine_steal_s,
            .machine_idle_s = machine.idle - start_.machine_idle_s};
  }

  double every_;
  std::vector<timeline_point>& points_;
  timeline_point start_;
  double next_ = 0;
  double last_ = 0;
  uint64_t examples_ = 0;
};

/// The Estimator's configuration of o's dense part (the embeddings' session is the caller's).
est::run_config run_config_of(const ctr_options& o) {
  return {
    .model_dir = o.model_dir, .seed = o.seed, .threads = o.threads, .optimizer = o.dense_optimizer};
}

/// The in-process embedding service of a run and the model over it.
struct ctr_service {
  std::unique_ptr<ops::session> session;
  est::model_fn model;
  /// The model's columns of dynamic embeddings.
  std::vector<ce::dense_ptr<float>> dynamic_columns;
};

caf::expected<ctr_service> start_service(const ctr_options& o) {
  if (auto err = validate(o))
    return err;
  auto session =
    ops::session::open({.name = "ctr", .threads = o.service_threads, .shards = o.shards});
  if (!session)
    return std::move(session.error());
  std::vector<ce::dense_ptr<float>> columns;
  auto fn = ctr_model(o, **session, &columns);
  if (!fn)
    return std::move(fn.error());
  return ctr_service{std::move(*session), std::move(*fn), std::move(columns)};
}

caf::expected<embedding_stats> table_totals(const ctr_options& o, ops::session& s) {
  std::set<std::string> names;
  for (auto& table : ctr_tables(o))
    names.insert(table.name);
  return ops::total_stats(s, names);
}

} // namespace

caf::expected<ctr_result> run_ctr(const ctr_options& o) {
  auto service = start_service(o);
  if (!service)
    return std::move(service.error());
  auto cfg = run_config_of(o);
  cfg.embeddings = service->session.get();
  est::estimator e{service->model, cfg};
  auto train = ops::ctr::ctr_file_input(o.train, {.batch_size = o.batch,
                                                  .epochs = o.epochs,
                                                  .max_rows = o.train_rows,
                                                  .skip_malformed = o.skip_malformed});
  // The reader runs prefetch_batches batches ahead (4 at least) and hands each batch's keys to
  // the tables as it reads it. A failed look-ahead leaves the rows where they are; the step's
  // lookup meets the same error and reports it.
  std::function<void(const est::batch&)> look_ahead;
  if (o.prefetch_batches > 0)
    look_ahead = [columns = service->dynamic_columns](const est::batch& b) {
      for (auto& column : columns)
        (void)est::prefetch_rows(column, b.features);
    };
  auto depth = std::max<size_t>(4, o.prefetch_batches);
  auto prefetched = [train, depth,
                     look_ahead]() -> caf::expected<std::unique_ptr<est::input_pipeline>> {
    auto p = train();
    if (!p)
      return p;
    return est::prefetch(std::move(*p), depth, look_ahead);
  };
  ctr_result r;
  std::vector<est::hook_ptr> hooks{std::make_shared<est::nan_guard>(),
                                   std::make_shared<timeline_hook>(o.timeline_every_s, r.timeline)};
  if (!o.quiet && o.train_rows > 0)
    hooks.push_back(std::make_shared<apps::progress_hook>((o.train_rows + o.batch - 1) / o.batch *
                                                          std::max<uint32_t>(o.epochs, 1)));
  auto start = std::chrono::steady_clock::now();
  auto trained = e.train(prefetched, 0, hooks);
  if (!trained)
    return std::move(trained.error());
  r.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.steps = trained->steps;
  r.phase_seconds = trained->phase_seconds;
  r.train_examples = trained->examples;
  r.examples_per_second = double(r.train_examples) / r.train_seconds;
  r.auc = r.log_loss = r.bayes_auc = nan;
  if (!o.eval.empty()) {
    auto eval = ops::ctr::ctr_file_input(
      o.eval, {.batch_size = 1000, .max_rows = o.eval_rows, .skip_malformed = o.skip_malformed});
    auto m = e.evaluate(eval);
    if (!m)
      return std::move(m.error());
    r.auc = m->at("auc_roc");
    r.log_loss = m->at("log_loss");
    auto bayes = ctr_bayes_auc(o.eval, o.eval_rows);
    if (bayes)
      r.bayes_auc = *bayes;
    else if (!is(bayes.error(), errc::not_found))
      return std::move(bayes.error());
  }
  auto totals = table_totals(o, *service->session);
  if (!totals)
    return std::move(totals.error());
  r.embedding_rows = totals->rows;
  r.cached_rows = totals->cached_rows;
  r.cache_capacity = totals->cache_capacity;
  r.tier_hits = totals->tier_hits;
  r.tier_misses = totals->tier_misses;
  r.disk_reads = totals->disk_reads;
  r.prefetched_rows = totals->prefetched_rows;
  r.memory_tier_bytes = totals->bytes;
  r.disk_bytes = totals->disk_bytes;
  r.evictions = totals->evictions;
  return r;
}

caf::error run_ctr_stream(const ctr_options& o, const ctr_stream_run& run,
                          const std::function<caf::error(const ctr_stream_window&)>& on_window) {
  auto checked = o;
  checked.train = run.source; // the stream stands for the training file
  auto online = run.online;
  online.batch = o.batch;
  online.tables.clear();
  for (auto& table : ctr_tables(o))
    online.tables.push_back(table.name);
  if (auto err = ops::online::validate(online))
    return err;
  auto service = start_service(checked);
  if (!service)
    return std::move(service.error());
  auto stream = ops::ctr::open_ctr_stream(run.source, run.stream);
  if (!stream)
    return std::move(stream.error());
  auto rows = ops::ctr::ctr_row_stream(std::move(*stream), run.source != "-", run.poll);
  return ops::online::run_online(*service->session, std::move(service->model), run_config_of(o),
                                 *rows, online, on_window);
}

} // namespace darcy::estimator_apps
