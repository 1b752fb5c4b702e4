#include "ops/online/online_trainer.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "compute/estimator/metrics.hpp"
#include "messages/error.hpp"
#include "ops/embedding_ops.hpp"
#include "ops/estimator/export/export.hpp"
#include "ops/estimator/hooks.hpp"
#include "runtime/log.hpp"

namespace darcy::ops::online {

namespace est = ops::estimator;
namespace ce = compute::estimator;
using steady = std::chrono::steady_clock;

namespace {

/// Records when each training step ends.
struct step_clock : est::session_run_hook {
  std::vector<steady::time_point> ends;
  caf::expected<est::hook_action> after_step(est::estimator&, const est::step_result&) override {
    ends.push_back(steady::now());
    return est::hook_action::go_on;
  }
};

/// The AUC of `scores` against `labels`.
caf::expected<double> auc_of(const std::vector<double>& scores, const std::vector<double>& labels) {
  auto auc = *ce::streaming_metric::make(ce::metric_kind::auc_roc);
  if (auto err = auc.update({scores, labels}))
    return make_error(err);
  return auc.value();
}

/// One run of run_online: the estimator, where the stream stands, and when the last syncs were.
class online_run {
public:
  online_run(session& s, est::model_fn model, est::run_config config, row_stream& rows,
             const online_options& o)
    : s_(s),
      rows_(rows),
      o_(o),
      e_(std::move(model), with_embeddings(std::move(config), s)),
      sync_(o.sync) {}

  caf::error run(const std::function<caf::error(const window_report&)>& on_window);

private:
  static est::run_config with_embeddings(est::run_config c, session& s) {
    c.embeddings = &s;
    return c;
  }

  caf::error resume();
  caf::error sync(window_report& r, bool last);
  caf::error score_frozen(window_report& r, const est::example_table& t, uint64_t rows);
  caf::expected<uint64_t> table_rows();
  est::input_fn input(std::shared_ptr<est::example_table> t, size_t batch, bool shuffle) const {
    return
      [=] { return est::make_dataset(t, {.batch_size = batch, .shuffle = shuffle, .seed = 1}); };
  }

  session& s_;
  row_stream& rows_;
  const online_options& o_;
  est::estimator e_;
  /// Rows trained on, those of a resumed run's last sync included, and those in the last sync.
  uint64_t trained_ = 0;
  uint64_t synced_rows_ = 0;
  bool resumed_ = false;
  /// The dense weights of a resumed run's last dense sync wait for the variables to be built.
  bool dense_pending_ = false;
  sync_writer sync_;
  /// The export of the first window, never synced: online training's baseline (on a resume,
  /// the one the first run made).
  std::unique_ptr<est::exported_model> frozen_;
};

caf::error online_run::resume() {
  auto step = sync_.resume(s_);
  if (!step)
    return std::move(step.error());
  if (!*step)
    return {};
  trained_ = synced_rows_ = static_cast<uint64_t>(std::max<int64_t>(**step, 0));
  resumed_ = dense_pending_ = true;
  if (rows_.can_skip()) {
    auto more = rows_.skip(trained_);
    if (!more)
      return std::move(more.error());
  }
  if (!o_.export_dir.empty())
    if (auto loaded = est::exported_model::load(o_.export_dir); loaded)
      frozen_ = std::move(*loaded);
  runtime::log_info("online: resumed from {} after {} rows", o_.sync.dir, trained_);
  return {};
}

caf::error online_run::sync(window_report& r, bool last) {
  synced_rows_ = trained_;
  auto synced = sync_.write(s_, e_, static_cast<int64_t>(trained_), last);
  if (!synced)
    return std::move(synced.error());
  r.sync_checkpoint = synced->checkpoint;
  r.sync_full = synced->full;
  r.sync_bytes = synced->bytes;
  r.dense_synced = synced->dense;
  r.sync_status = synced->push.status;
  r.push_bytes = synced->push.bytes;
  r.push_whole_chain = synced->push.whole_chain;
  r.push_sent = synced->push_sent;
  r.push_answered = synced->push_answered;
  return {};
}

caf::error online_run::score_frozen(window_report& r, const est::example_table& t, uint64_t rows) {
  r.frozen_auc = std::numeric_limits<double>::quiet_NaN();
  if (!frozen_)
    return {};
  std::vector<size_t> all(rows);
  std::iota(all.begin(), all.end(), size_t{0});
  auto scores = frozen_->predict(est::gather(t, all));
  if (!scores)
    return std::move(scores.error());
  std::vector<double> p(rows), y(rows);
  r.frozen_scores.resize(rows);
  for (size_t i = 0; i < rows; ++i) {
    p[i] = r.frozen_scores[i] = (*scores)(Eigen::Index(i), 0);
    y[i] = t.labels(Eigen::Index(i), 0);
  }
  auto auc = auc_of(p, y);
  if (!auc)
    return std::move(auc.error());
  r.frozen_auc = *auc;
  return {};
}

caf::expected<uint64_t> online_run::table_rows() {
  uint64_t total = 0;
  for (auto& name : o_.tables) {
    auto st = ops::stats(s_, name);
    if (!st)
      return std::move(st.error());
    total += st->rows;
  }
  return total;
}

caf::error online_run::run(const std::function<caf::error(const window_report&)>& on_window) {
  if (!o_.sync.dir.empty())
    if (auto err = resume())
      return err;
  for (uint64_t w = 1; o_.max_windows == 0 || w <= o_.max_windows; ++w) {
    auto window = rows_.next_window(o_.window_rows);
    if (!window)
      return std::move(window.error());
    if (window->rows == 0) { // the stream ended with the last window: sync it if not yet
      window_report r;
      if (o_.sync.dir.empty() || synced_rows_ == trained_)
        return {};
      return sync(r, true);
    }
    auto table = window->table;
    if (o_.before_window)
      if (auto err = o_.before_window(w, *table))
        return err;
    if (dense_pending_) { // the variables exist once built from a batch
      dense_pending_ = false;
      if (auto err = e_.build(input(table, o_.batch, false)))
        return err;
      if (auto step = est::read_dense_sync(e_, o_.sync.dir);
          !step && !is(step.error(), errc::not_found))
        return std::move(step.error());
    }
    window_report r;
    r.window = w;
    if (auto err = score_frozen(r, *table, window->rows))
      return err;
    auto m = e_.evaluate(input(table, 1000, false));
    if (!m)
      return std::move(m.error());
    r.auc = m->at("auc_roc");
    r.log_loss = m->at("log_loss");
    auto start = steady::now();
    auto clock = std::make_shared<step_clock>();
    auto t = e_.train(input(table, o_.batch, true), 0, {std::make_shared<est::nan_guard>(), clock});
    if (!t)
      return std::move(t.error());
    auto seconds = std::chrono::duration<double>(steady::now() - start).count();
    if (w == 1 && !o_.export_dir.empty() && !frozen_) {
      auto exported = est::export_model(e_, o_.export_dir, input(table, o_.batch, false));
      if (!exported)
        return std::move(exported.error());
      auto loaded = est::exported_model::load(o_.export_dir, *exported);
      if (!loaded)
        return std::move(loaded.error());
      frozen_ = std::move(*loaded);
    }
    r.step_ends = std::move(clock->ends);
    trained_ += window->rows;
    r.rows = trained_;
    r.examples_per_second = double(window->rows) / seconds;
    auto table_count = table_rows();
    if (!table_count)
      return std::move(table_count.error());
    r.embedding_rows = *table_count;
    bool last = window->ended || w == o_.max_windows;
    if (!o_.sync.dir.empty() && (last || sync_.due()))
      if (auto err = sync(r, last))
        return err;
    if (auto err = on_window(r))
      return err;
    if (window->ended)
      return {};
  }
  return {};
}

} // namespace

caf::error validate(const online_options& o) {
  if (o.window_rows == 0 || o.batch == 0)
    return make_error(errc::invalid_config, "online: a window and a batch must hold rows");
  if (!o.sync.push.url.empty() && o.sync.dir.empty())
    return make_error(errc::invalid_config, "online: a sync push needs a sync folder");
  return validate(o.sync.push);
}

caf::error run_online(session& s, est::model_fn model, est::run_config config, row_stream& rows,
                      const online_options& o,
                      const std::function<caf::error(const window_report&)>& on_window) {
  if (auto err = validate(o))
    return err;
  online_run run{s, std::move(model), std::move(config), rows, o};
  return run.run(on_window);
}

} // namespace darcy::ops::online
