// JSON bodies of the serving API, both ways: a top-k request body into a topk_request (every
// field checked, unknown fields refused), and answers and statuses into JSON text.
#pragma once

#include <string>

#include <caf/expected.hpp>

#include "apps/serving/serve_config.hpp"
#include "messages/serving/serving_values.hpp"

namespace darcy::serving {

struct topk_body {
  topk_request request;
  uint32_t deadline_ms = 0;
};

/// Parses {"user": id} | {"items": [...], "values": [...]} | {"vector": [...]} with optional
/// "k" (1..max_k, default 10), "deadline_ms" (1..max_deadline_ms, default from the config) and
/// "allow_partial" (default false). errc::invalid_argument naming the problem: malformed JSON,
/// not an object, none or several of user/items/vector, a field of the wrong type or range,
/// an unknown field.
caf::expected<topk_body> parse_topk_body(const std::string& body, const serve_config& config);

/// Parses {"version": "3"} or {} (or an empty body) into the version (empty: the newest).
/// errc::invalid_argument for a version that is not a folder name (stores::check_checkpoint_name:
/// no '/', no '..'), so that a client never names a path outside the model's exports.
caf::expected<std::string> parse_load_body(const std::string& body);

std::string topk_json(const std::string& model, const topk_response& r,
                      const std::string& trace_id);

std::string status_json(const model_status& s);

/// {"model": m, "version": v} after a load, {"model": m, "unloaded": true} for an empty version.
std::string manage_json(const std::string& model, const std::string& version);

/// {"models": [{"name", "state", "version"}, ...]}.
std::string models_json(const std::vector<model_status>& models);

} // namespace darcy::serving
