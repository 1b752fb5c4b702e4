#include "apps/serving/serve_config.hpp"

#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "messages/error.hpp"
#include "runtime/http/http_server.hpp"

namespace darcy::serving {

namespace {

caf::error bad(const std::string& origin, const std::string& what) {
  return make_error(errc::invalid_config, origin + ": " + what);
}

caf::error read_names(const toml::table& t, const char* key, std::vector<std::string>& out,
                      const std::string& origin, const std::string& where) {
  auto node = t.get(key);
  if (node == nullptr)
    return {};
  auto array = node->as_array();
  if (array == nullptr)
    return bad(origin, where + "." + key + " must be a list of principals");
  out.clear();
  for (auto& x : *array) {
    auto name = x.value<std::string>();
    if (!name)
      return bad(origin, where + "." + key + " must hold strings");
    out.push_back(*name);
  }
  return {};
}

caf::error read_rules(const toml::table& t, access_rules& rules, const std::string& origin,
                      const std::string& where) {
  for (auto& [key, value] : t)
    if (key != "query" && key != "manage" && key != "quotas")
      return bad(origin, "unknown key " + where + "." + std::string{key.str()});
  if (auto err = read_names(t, "query", rules.acl.query, origin, where))
    return err;
  if (auto err = read_names(t, "manage", rules.acl.manage, origin, where))
    return err;
  if (auto node = t.get("quotas")) {
    auto array = node->as_array();
    if (array == nullptr)
      return bad(origin, where + ".quotas must be an array of tables ([[...quotas]])");
    for (auto& x : *array) {
      auto q = x.as_table();
      if (q == nullptr)
        return bad(origin, where + ".quotas must hold tables");
      quota_rule rule;
      rule.principal = (*q)["principal"].value_or(std::string{"*"});
      rule.app = (*q)["app"].value_or(std::string{"*"});
      rule.rate = (*q)["rate"].value_or(0.0);
      rule.burst = (*q)["burst"].value_or(rule.rate);
      if (!(rule.rate > 0) || !(rule.burst >= 1))
        return bad(origin, where + ".quotas: rate must be above 0 and burst at least 1");
      rules.quotas.push_back(rule);
    }
  }
  return {};
}

} // namespace

const access_rules& serve_config::rules_of(const std::string& model) const {
  auto it = models.find(model);
  return it == models.end() ? defaults : it->second;
}

caf::expected<serve_config> parse_serve_config(const std::string& text, const std::string& origin) {
  toml::table t;
  try {
    t = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return bad(origin, std::string{e.description()});
  }
  serve_config c;
  for (auto& [key, value] : t)
    if (key != "tokens" && key != "http" && key != "defaults" && key != "models")
      return bad(origin, "unknown table [" + std::string{key.str()} + "]");
  if (auto tokens = t["tokens"].as_table())
    for (auto& [token, principal] : *tokens) {
      auto name = principal.value<std::string>();
      if (!name || name->empty() || token.str().empty())
        return bad(origin, "tokens: every token must map to a principal's name");
      c.tokens[std::string{token.str()}] = *name;
    }
  if (auto http = t["http"].as_table()) {
    c.default_deadline_ms = (*http)["default_deadline_ms"].value_or(c.default_deadline_ms);
    c.max_deadline_ms = (*http)["max_deadline_ms"].value_or(c.max_deadline_ms);
    c.max_body_bytes = (*http)["max_body_bytes"].value_or(c.max_body_bytes);
    c.max_sync_bytes = (*http)["max_sync_bytes"].value_or(c.max_sync_bytes);
    c.max_k = (*http)["max_k"].value_or(c.max_k);
    if (c.default_deadline_ms == 0 || c.max_deadline_ms < c.default_deadline_ms ||
        c.max_body_bytes == 0 || c.max_sync_bytes == 0 || c.max_k == 0)
      return bad(origin,
                 "http: deadlines, max_body_bytes, max_sync_bytes and max_k must be positive, "
                 "and default_deadline_ms at most max_deadline_ms");
  }
  if (auto defaults = t["defaults"].as_table())
    if (auto err = read_rules(*defaults, c.defaults, origin, "defaults"))
      return err;
  if (auto models = t["models"].as_table())
    for (auto& [name, rules] : *models) {
      auto table = rules.as_table();
      if (table == nullptr)
        return bad(origin, "models." + std::string{name.str()} + " must be a table");
      auto& r = c.models[std::string{name.str()}];
      r = c.defaults;
      r.quotas.clear();
      if (auto err = read_rules(*table, r, origin, "models." + std::string{name.str()}))
        return err;
    }
  return c;
}

caf::expected<serve_config> load_serve_config(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return make_error(errc::invalid_config, path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_serve_config(text.str(), path);
}

caf::error may_manage_from(const serve_config& config, const std::string& peer) {
  if (!config.tokens.empty() || runtime::is_loopback_address(peer))
    return {};
  return make_error(errc::permission_denied,
                    "no bearer tokens are configured, so :load and :unload are accepted from "
                    "loopback only; give darcy serve a --config with a [tokens] table (and "
                    "each model's manage list) to manage models from other hosts");
}

std::string manage_policy_line(const serve_config& config) {
  if (config.tokens.empty())
    return "no bearer tokens configured: :load and :unload are accepted from loopback only "
           "(give --config with a [tokens] table to manage models from other hosts)";
  return std::to_string(config.tokens.size()) +
         " bearer token(s) configured: :load and :unload follow each model's manage list";
}

} // namespace darcy::serving
