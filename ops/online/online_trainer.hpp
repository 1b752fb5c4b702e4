// Online training: a model function trained on an endless row stream window by window, each
// window predicted before it is trained on (progressive validation), with syncs that serving
// copies follow and that a rerun resumes from. Apps supply the model and the stream
// (`darcy estimator ctr --stream`); the loop, its syncs, pushes and resume are here.
//
//   online_options o{.window_rows = 10000, .sync = {.dir = "sync", .push = {.url = url}}};
//   auto err = run_online(session, model_fn, run_config, *stream, o,
//                         [](const window_report& w) { print(w); return caf::error{}; });
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "ops/estimator/estimator.hpp"
#include "ops/online/row_stream.hpp"
#include "ops/online/sync_writer.hpp"
#include "ops/session.hpp"

namespace darcy::ops::online {

struct online_options {
  /// Rows a window: each is predicted, then trained on, in batches of `batch`.
  uint64_t window_rows = 10000;
  size_t batch = 128;
  /// Stop after this many windows (0: when the stream ends).
  uint64_t max_windows = 0;
  sync_policy sync;
  /// After the first window, the model is exported here once (a version under this model
  /// folder, for `darcy serve`), so that serving can start on it and follow the syncs; each
  /// later window is also scored by that frozen export. Empty: no export.
  std::string export_dir;
  /// The tables whose rows each window reports (window_report::embedding_rows).
  std::vector<std::string> tables;
  /// Gets each window's rows before the model predicts or trains on them; an error it returns
  /// ends the run with it. Empty: none.
  std::function<caf::error(uint64_t window, const estimator::example_table& rows)> before_window;
};

/// One window of an online run.
struct window_report {
  /// 1-based.
  uint64_t window = 0;
  /// Rows trained on by its end, its own included.
  uint64_t rows = 0;
  /// Of the window's rows, predicted by the model before it trained on them.
  double auc = 0;
  double log_loss = 0;
  /// The window's training rate.
  double examples_per_second = 0;
  /// Rows of online_options::tables after the window.
  uint64_t embedding_rows = 0;
  /// With a sync folder, the checkpoint written after the window (empty: none), whether it is
  /// a full one, and the bytes of its parts.
  std::string sync_checkpoint;
  bool sync_full = false;
  uint64_t sync_bytes = 0;
  /// Whether the dense weights went with that sync.
  bool dense_synced = false;
  /// With a push target: the push's HTTP status (0: no answer), and when it was sent and
  /// answered.
  unsigned sync_status = 0;
  /// The bytes of the parts that push carried (push_mode::rows; its retries included), and
  /// whether it carried a whole chain (a restore) rather than the deltas since the last one.
  uint64_t push_bytes = 0;
  bool push_whole_chain = false;
  std::chrono::steady_clock::time_point push_sent{};
  std::chrono::steady_clock::time_point push_answered{};
  /// When each training step of the window ended.
  std::vector<std::chrono::steady_clock::time_point> step_ends;
  /// With export_dir, from the second window: the AUC on the window of the model as exported
  /// after the first one, never synced (NaN before): what online training gains over it.
  double frozen_auc = 0;
  /// That export's score of each of the window's rows (empty before).
  std::vector<float> frozen_scores;
};

/// errc::invalid_config for options no run can take: windows without rows or batches without
/// examples, a push without a sync folder or to a URL that is not http://HOST:PORT/PATH.
caf::error validate(const online_options& o);

/// Trains the model of `model` (binary classification: its metrics include auc_roc and
/// log_loss) with `config`, its dynamic embeddings in `s`, on `rows` window by window until the
/// stream ends or o.max_windows. `on_window` gets each window's figures, and an error it
/// returns ends the run with it. A last partial window of an ended stream is evaluated and
/// trained on too. With a sync folder, the last window is always synced (the dense weights
/// with it), and its push is tried again, every sync.every, up to 3 more times while it is not
/// answered 200. config.embeddings is set to `s`.
caf::error run_online(session& s, estimator::model_fn model, estimator::run_config config,
                      row_stream& rows, const online_options& o,
                      const std::function<caf::error(const window_report&)>& on_window);

} // namespace darcy::ops::online
