// What every :predict body has around its instances, whatever the model:
// {"instances": [...], "deadline_ms": N, "allow_partial": B}, the last two optional.
#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

namespace darcy::serving {

/// Instances one predict request may carry.
inline constexpr size_t max_predict_instances = 4096;

struct predict_envelope {
  /// A non-empty array, at most max_predict_instances long; its items are the model's to read.
  nlohmann::json instances;
  /// 0: the server's default deadline.
  uint32_t deadline_ms = 0;
  /// Answer without the rows of an embedding shard silent at the deadline (those keys get rows
  /// of zeros, and the answer says "partial": true) instead of failing with 504.
  bool allow_partial = false;
};

/// errc::invalid_argument for a body that is not such an object, an unknown field, or a
/// deadline_ms outside [1, max_deadline_ms]; errc::batch_too_large beyond
/// max_predict_instances; errc::empty_batch for no instance.
caf::expected<predict_envelope> parse_predict_envelope(const std::string& body,
                                                       uint32_t max_deadline_ms);

} // namespace darcy::serving
