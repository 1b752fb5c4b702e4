// A PyTorch export's inputs for a batch of instances: the dense values each instance gives, and
// each slot's pooled rows (ops/torch/torch_export.hpp), every table looked up in one request.
// Serving builds the TorchScript module's inputs from them (apps/serving/torch_model.hpp).
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "ops/session.hpp"
#include "ops/torch/torch_export.hpp"

namespace darcy::ops {

struct torch_batch {
  size_t instances = 0;
  /// One a dense input of the spec: instances × its size values, row-major.
  std::vector<std::vector<float>> dense;
  /// One a pool of the spec (its slots' pools in order): each instance's keys.
  std::vector<std::vector<std::vector<std::string>>> keys;
};

/// `instances`, a JSON array of objects, read against `spec`: each gives every dense input (a
/// number, or a list of the input's size in numbers, finite) and every feature (an id, a
/// string key, or a list of them; an integer id's key is its decimal digits), and nothing
/// else. errc::invalid_argument naming the instance and the field otherwise; errc::empty_batch
/// for none.
caf::expected<torch_batch> read_torch_instances(const torch_spec& spec,
                                                const nlohmann::json& instances);

/// Appends `more`'s instances (read against the same spec) to `into`.
void append_instances(torch_batch& into, torch_batch&& more);

/// Each slot's pooled rows for `b`: instances × the slot's width, row-major, its pools side by
/// side, a bag summed or averaged (an empty one: zeros). Every table of `configs` that a pool
/// names is looked up once, in one request, for inference. errc::unknown_embedding for a pool
/// whose table is not among `configs`; the lookup's errors.
caf::expected<std::vector<std::vector<float>>> pool_slots(session& s, const torch_spec& spec,
                                                          const std::vector<de_config>& configs,
                                                          const torch_batch& b);

} // namespace darcy::ops
