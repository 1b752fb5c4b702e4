// PyTorch exports behind `darcy serve` (darcy.torch.export): the TorchScript dense part run with
// LibTorch on the pooled rows of the export's tables, which live in this process or on a
// cluster's shards. Requests that arrive while a batch runs are answered by the next, together.
//
//   POST /v1/models/{name}:predict  {"instances": [{"x": [0.1, ...], "user": [7], ...}, ...]}
//   → {"model": name, "version": "2", "predictions": [0.83, ...]}
#pragma once

#include <memory>
#include <string>

#include <caf/expected.hpp>

#include "apps/serving/served_model.hpp"
#include "ops/estimator/export/export.hpp"

namespace darcy::serving {

class torch_model : public served_model {
public:
  /// The newest PyTorch export under `dir`, its requests admitted by `rules`, its tables
  /// where `where` says, the syncs that arrive as messages kept under `sync_dir` (empty: a
  /// temporary folder of its own). errc::unsupported in a build without LibTorch;
  /// read_torch_export's errors; errc::corrupt_file for a module LibTorch cannot load;
  /// open_serving_tables's.
  static caf::expected<std::unique_ptr<torch_model>> load(
    const std::string& dir, access_rules rules,
    const ops::estimator::embedding_placement& where = {}, const std::string& sync_dir = {});

  ~torch_model() override;

  /// Each instance gives every dense input and feature of the export's spec
  /// (ops::read_torch_instances); the answer's "predictions" hold each instance's output, a
  /// number for a model with one number an example, else a list (row-major), and, once a sync
  /// was applied, "sync" naming the last one done before the request came ({"checkpoint",
  /// "step", "dense_step"}: the answer holds that sync, or a later one). With the tables
  /// on shards, the lookups wait until the earliest deadline of the requests batched together.
  /// errc::access_denied or errc::quota_exceeded by the rules; parse_predict_envelope's and
  /// read_torch_instances's errors; the lookup's; errc::invalid_argument for a module that
  /// rejects its inputs.
  caf::expected<std::string> predict(const std::string& name, const std::string& body,
                                     const request_context& ctx,
                                     uint32_t max_deadline_ms = 60000) override;

  /// The JSON answer to a sync request of ctx.principal ({"dir": SYNC_DIR}, a folder this host
  /// reads, or a sync message (ops/online/sync_message.hpp) of such a folder, installed in the
  /// model's sync_mirror first, with its refusals, errc::out_of_order asking for the whole
  /// chain), which needs `manage` on the model: its tables are brought to the head of SYNC_DIR's
  /// chain (ops::follow_chain), then its module to SYNC_DIR's newest dense sync, when there is
  /// a newer one than it runs (ops::read_torch_dense_sync; one of other inputs is refused).
  /// One sync at a time (another is refused with errc::unavailable) while predictions go on.
  /// Answers {"model", "sync": {"checkpoint", "step", "dense_step", "applied", "restored"}};
  /// describe()'s "sync" names the dense sync held too ("dense_checkpoint").
  caf::expected<std::string> sync(const std::string& name, const std::string& body,
                                  const request_context& ctx) override;

  /// {"name", "kind": "pytorch", "version", "embeddings": "shards" or "in-process",
  /// "inputs": [the dense inputs' and features' names]}.
  std::string describe(const std::string& name) const override;

  struct impl;

private:
  explicit torch_model(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

} // namespace darcy::serving
