// A PyTorch model's serving export (darcy.torch.export in Python): its dense part as TorchScript,
// a spec saying how a request's instances feed it, and its tables as a Darcy checkpoint beside
// them; one version under an export root, as the Estimator's exports are. This file reads and
// writes them; serving runs them (apps/serving/torch_model.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>

#include "ops/session.hpp"

namespace darcy::ops {

/// One feature pooled from a table: its rows summed or averaged, `dim` values.
struct torch_pool {
  std::string feature;
  std::string table;
  size_t dim = 0;
  bool mean = false;
};

/// A Darcy module of the exported model: the pools whose rows, side by side in this order, are
/// one input of the TorchScript module (batch, sum of the dims).
struct torch_slot {
  std::string module;
  std::vector<torch_pool> pools;
  size_t width() const;
};

/// A dense input: a request gives `name` per instance, `shape` values in row-major order.
struct torch_dense_input {
  std::string name;
  std::vector<int64_t> shape;
  size_t size() const;
};

/// How a request's instances feed the TorchScript module: its inputs are the dense ones, then
/// one a slot, each with the batch first.
struct torch_spec {
  std::vector<torch_dense_input> dense;
  std::vector<torch_slot> slots;
  /// The shape of one instance's output.
  std::vector<int64_t> output;
};

/// The spec of JSON `text` (darcy.torch.export's); errc::corrupt_file naming what is wrong.
caf::expected<torch_spec> parse_torch_spec(const std::string& text);

struct torch_export {
  std::string version;
  /// The TorchScript module's bytes.
  std::string module;
  torch_spec spec;
  /// The directory of the tables' checkpoint.
  std::string embeddings;
};

/// Whether the newest version under `dir` is a PyTorch export.
bool is_torch_export(const std::string& dir);

/// Writes the next version under `dir`: `module` (TorchScript bytes), `spec` (JSON, checked
/// with parse_torch_spec) and every table of `s` (a checkpoint in VERSION/embeddings); the
/// newest `keep` versions stay. Returns the version; a failure leaves none behind.
caf::expected<std::string> write_torch_export(session& s, const std::string& dir,
                                              std::string_view module, const std::string& spec,
                                              size_t keep);

/// Version `version` (empty: the newest) of the PyTorch export under `dir`. errc::not_found
/// for none; errc::invalid_config for another kind of export; errc::corrupt_file for damage.
caf::expected<torch_export> read_torch_export(const std::string& dir,
                                              const std::string& version = "");

/// Whether a module of spec `b` takes the inputs and gives the output of one of spec `a`.
bool same_inputs(const torch_spec& a, const torch_spec& b);

/// The service of a PyTorch dense sync's manifests (what a sync mirror accepts as dense).
inline constexpr const char* torch_dense_sync_service = "darcy.torch_dense_sync";

/// A PyTorch trainer's dense weights for the servers that follow its syncs: its dense part
/// traced again, TorchScript, at `step`.
struct torch_dense_sync {
  std::string version;
  int64_t step = 0;
  std::string module;
  torch_spec spec;
};

/// Writes the next dense sync under SYNC_DIR/dense (the tables' chain is SYNC_DIR's own:
/// ops::save with full_every); the newest two stay. errc::invalid_argument for a bad spec.
caf::expected<std::string> write_torch_dense_sync(const std::string& sync_dir,
                                                  std::string_view module, const std::string& spec,
                                                  int64_t step);

/// The newest dense sync under SYNC_DIR/dense; errc::not_found for none.
caf::expected<torch_dense_sync> read_torch_dense_sync(const std::string& sync_dir);

} // namespace darcy::ops
