// JSON bodies of the serving API, both ways: a top-k request body into a topk_request and an
// add's body into new items (every field checked, unknown fields refused), and answers and
// statuses into JSON text.
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

/// Parses {"user": id} | {"items": [...], "values": [...], "features": [...]} (items, features
/// or both: a new user) | {"vector": [...]} with optional
/// "k" (1..max_k, default 10), "deadline_ms" (1..max_deadline_ms, default from the config) and
/// "allow_partial" (default false). errc::invalid_argument naming the problem: malformed JSON,
/// not an object, none or several of user/new user/vector, a field of the wrong type or range,
/// an unknown field.
caf::expected<topk_body> parse_topk_body(const std::string& body, const serve_config& config);

/// Parses {"items": [{"name": n, "features": [...], "users": [...], "values": [...]}, ...]}:
/// the new items of an add, each with a name and optional features, users and values (one per
/// user). errc::invalid_argument naming the problem: malformed JSON, no items, an item without
/// a name, values without users, a field of the wrong type, an unknown field. What the model
/// makes of them (unknown names, nothing known) is the root's to say.
caf::expected<std::vector<new_item>> parse_items_body(const std::string& body);

/// {"model": m, "version": v, "items": [{"name", "id", "shard"}, ...]} after an add.
std::string items_json(const std::string& model, const std::vector<new_item>& items,
                       const add_items_response& r);

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
