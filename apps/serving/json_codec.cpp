#include "apps/serving/json_codec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include <nlohmann/json.hpp>

#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::serving {

namespace {

using nlohmann::json;

caf::error bad(const std::string& what) {
  return make_error(errc::invalid_argument, what);
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A string or a non-negative integer, as text.
caf::expected<std::string> id_text(const json& x, const std::string& field) {
  if (x.is_string())
    return x.get<std::string>();
  if (x.is_number_unsigned())
    return std::to_string(x.get<uint64_t>());
  return bad(field + " must be a string or a non-negative integer");
}

// A non-empty array of ids (id_text each) as text.
caf::expected<std::vector<std::string>> id_list(const json& x, const std::string& field,
                                                const std::string& each) {
  if (!x.is_array() || x.empty())
    return bad(field + " must be a non-empty array of " + each + " ids");
  std::vector<std::string> out;
  for (auto& id : x) {
    auto text = id_text(id, "each " + each);
    if (!text)
      return std::move(text.error());
    out.push_back(std::move(*text));
  }
  return out;
}

caf::expected<std::vector<float>> floats(const json& x, const std::string& field) {
  if (!x.is_array())
    return bad(field + " must be an array of numbers");
  std::vector<float> out;
  out.reserve(x.size());
  for (auto& v : x) {
    if (!v.is_number())
      return bad(field + " must be an array of numbers");
    out.push_back(v.get<float>());
  }
  return out;
}

caf::expected<uint32_t> bounded(const json& x, const std::string& field, uint32_t max) {
  if (!x.is_number_unsigned() || x.get<uint64_t>() == 0 || x.get<uint64_t>() > max)
    return bad(field + " must be an integer from 1 to " + std::to_string(max));
  return static_cast<uint32_t>(x.get<uint64_t>());
}

} // namespace

caf::expected<topk_body> parse_topk_body(const std::string& body, const serve_config& config) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded())
    return bad("the body is not valid JSON");
  if (!j.is_object())
    return bad("the body must be a JSON object");
  topk_body out;
  auto& r = out.request;
  out.deadline_ms = config.default_deadline_ms;
  int queries = 0;
  // Items and features together are one query: a new user.
  bool new_user = false;
  for (auto& [key, value] : j.items()) {
    if (key == "user") {
      auto user = id_text(value, "user");
      if (!user)
        return std::move(user.error());
      r.kind = query_kind::user;
      r.user = std::move(*user);
      ++queries;
    } else if (key == "items" || key == "features") {
      auto ids = id_list(value, key, key == "items" ? "item" : "feature");
      if (!ids)
        return std::move(ids.error());
      (key == "items" ? r.items : r.features) = std::move(*ids);
      r.kind = query_kind::items;
      new_user = true;
    } else if (key == "values") {
      auto values = floats(value, "values");
      if (!values)
        return std::move(values.error());
      r.values = std::move(*values);
    } else if (key == "vector") {
      auto vector = floats(value, "vector");
      if (!vector)
        return std::move(vector.error());
      r.kind = query_kind::vector;
      r.vector = std::move(*vector);
      ++queries;
    } else if (key == "k") {
      auto k = bounded(value, "k", config.max_k);
      if (!k)
        return std::move(k.error());
      r.k = *k;
    } else if (key == "deadline_ms") {
      auto ms = bounded(value, "deadline_ms", config.max_deadline_ms);
      if (!ms)
        return std::move(ms.error());
      out.deadline_ms = *ms;
    } else if (key == "allow_partial") {
      if (!value.is_boolean())
        return bad("allow_partial must be true or false");
      r.allow_partial = value.get<bool>();
    } else {
      return bad("unknown field '" + key + "'");
    }
  }
  if (queries + (new_user ? 1 : 0) != 1)
    return bad("give exactly one of user, items (with or without features) and vector");
  if (!r.values.empty() && r.items.empty())
    return bad("values go with items");
  return out;
}

caf::expected<std::vector<new_item>> parse_items_body(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded())
    return bad("the body is not valid JSON");
  if (!j.is_object() || j.size() != 1 || !j.contains("items") || !j["items"].is_array() ||
      j["items"].empty())
    return bad("the body must be {\"items\": [...]}, a non-empty array of new items");
  std::vector<new_item> out;
  for (auto& x : j["items"]) {
    if (!x.is_object())
      return bad("each new item must be an object");
    new_item item;
    for (auto& [key, value] : x.items()) {
      if (key == "name") {
        auto name = id_text(value, "name");
        if (!name)
          return std::move(name.error());
        item.name = std::move(*name);
      } else if (key == "features" || key == "users") {
        auto ids = id_list(value, key, key == "users" ? "user" : "feature");
        if (!ids)
          return std::move(ids.error());
        (key == "users" ? item.users : item.features) = std::move(*ids);
      } else if (key == "values") {
        auto values = floats(value, "values");
        if (!values)
          return std::move(values.error());
        item.values = std::move(*values);
      } else {
        return bad("unknown field '" + key + "' of a new item");
      }
    }
    if (item.name.empty())
      return bad("each new item needs a name");
    if (!item.values.empty() && item.users.empty())
      return bad("values go with users");
    out.push_back(std::move(item));
  }
  return out;
}

std::string items_json(const std::string& model, const std::vector<new_item>& items,
                       const add_items_response& r) {
  json added = json::array();
  for (size_t i = 0; i < r.ids.size() && i < items.size(); ++i)
    added.push_back({{"name", items[i].name}, {"id", r.ids[i]}, {"shard", r.shards[i]}});
  return dump(json{{"model", model}, {"version", r.version}, {"items", added}});
}

caf::expected<std::string> parse_load_body(const std::string& body) {
  if (body.empty())
    return std::string{};
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return bad("the body must be a JSON object such as {\"version\": \"3\"}");
  std::string version;
  for (auto& [key, value] : j.items()) {
    if (key != "version")
      return bad("unknown field '" + key + "'");
    auto v = id_text(value, "version");
    if (!v)
      return std::move(v.error());
    version = std::move(*v);
  }
  if (!version.empty())
    if (auto err = stores::check_checkpoint_name(version))
      return err;
  return version;
}

namespace {

// Appends s as a JSON string: printable ASCII as it is, anything else through nlohmann (escapes,
// and invalid UTF-8 replaced).
void append_string(std::string& out, const std::string& s) {
  auto plain = std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += dump(json(s));
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

// Appends x in its shortest form that reads back as the same float, with ".0" when integral
// (as nlohmann writes numbers of type float); not finite: null.
void append_float(std::string& out, float x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), x);
  std::string_view text{buffer, static_cast<size_t>(end - buffer)};
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos)
    out += ".0";
}

template <class T>
void append_integer(std::string& out, T x) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), x);
  out.append(buffer, end);
}

} // namespace

// Written by hand, not through a json value: this is the reply to every query, and building
// the value cost more than the rest of the front's JSON work.
std::string topk_json(const std::string& model, const topk_response& r,
                      const std::string& trace_id) {
  std::string out;
  out.reserve(128 + r.ids.size() * 48);
  out += "{\"items\":[";
  for (size_t i = 0; i < r.ids.size(); ++i) {
    out += i == 0 ? "{\"id\":" : ",{\"id\":";
    append_integer(out, r.ids[i]);
    out += ",\"name\":";
    append_string(out, r.names[i]);
    out += ",\"score\":";
    append_float(out, r.scores[i]);
    out += '}';
  }
  out += "],\"missing_shards\":[";
  for (size_t i = 0; i < r.missing_shards.size(); ++i) {
    if (i > 0)
      out += ',';
    append_integer(out, r.missing_shards[i]);
  }
  out += "],\"model\":";
  append_string(out, model);
  out += r.partial ? ",\"partial\":true,\"trace_id\":" : ",\"partial\":false,\"trace_id\":";
  append_string(out, trace_id);
  out += ",\"version\":";
  append_string(out, r.version);
  out += '}';
  return out;
}

std::string status_json(const model_status& s) {
  json shards = json::array();
  for (auto& h : s.shards)
    shards.push_back({{"shard", h.shard},
                      {"node", h.node},
                      {"up", h.up},
                      {"restarts", h.restarts},
                      {"answered", h.answered},
                      {"failed", h.failed},
                      {"batches", h.batches},
                      {"resent", h.resent},
                      {"mean_ms", h.latency.count ? h.latency.sum_ms / h.latency.count : 0.0}});
  json principals = json::array();
  for (auto& p : s.principals)
    principals.push_back({{"principal", p.principal},
                          {"requests", p.requests},
                          {"rows", p.rows},
                          {"denied_access", p.denied_access},
                          {"denied_quota", p.denied_quota}});
  json j = {{"name", s.model},          {"state", to_string(s.state)}, {"version", s.version},
            {"loading", s.loading},     {"last_error", s.last_error},  {"shards", shards},
            {"principals", principals}, {"events", s.events}};
  return dump(j);
}

std::string manage_json(const std::string& model, const std::string& version) {
  if (version.empty())
    return dump(json{{"model", model}, {"unloaded", true}});
  return dump(json{{"model", model}, {"version", version}});
}

std::string models_json(const std::vector<model_status>& models) {
  json list = json::array();
  for (auto& m : models)
    list.push_back({{"name", m.model}, {"state", to_string(m.state)}, {"version", m.version}});
  return dump(json{{"models", list}});
}

} // namespace darcy::serving
