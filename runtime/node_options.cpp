#include "runtime/node_options.hpp"

#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "messages/error.hpp"
#include "runtime/cluster/cluster_secret.hpp"

namespace darcy::runtime {

namespace {

std::string where(const std::string& path, const toml::source_region& src) {
  std::ostringstream out;
  out << path << ':' << src.begin.line << ':' << src.begin.column;
  return out.str();
}

caf::error config_error(const std::string& path, const toml::node& node, const std::string& what) {
  return make_error(errc::invalid_config, where(path, node.source()) + ": " + what);
}

// Checks that `table` has only `allowed` keys.
caf::error check_keys(const std::string& path, const toml::table& table, const std::string& prefix,
                      const std::set<std::string>& allowed) {
  for (auto&& [key, value] : table)
    if (allowed.count(std::string{key.str()}) == 0)
      return config_error(path, value, "unknown key '" + prefix + std::string{key.str()} + "'");
  return {};
}

caf::error read_string(const std::string& path, const toml::table& table, const char* key,
                       std::string& out) {
  auto node = table.get(key);
  if (!node)
    return {};
  auto value = node->value<std::string>();
  if (!value)
    return config_error(path, *node, std::string{"'"} + key + "' must be a string");
  out = *value;
  return {};
}

caf::error read_bool(const std::string& path, const toml::table& table, const char* key,
                     bool& out) {
  auto node = table.get(key);
  if (!node)
    return {};
  auto value = node->value<bool>();
  if (!value)
    return config_error(path, *node, std::string{"'"} + key + "' must be true or false");
  out = *value;
  return {};
}

caf::error read_endpoint(const std::string& path, const toml::table& table, const char* key,
                         std::optional<host_port>& out) {
  std::string text;
  if (auto err = read_string(path, table, key, text))
    return err;
  if (text.empty())
    return {};
  auto parsed = parse_host_port(text);
  if (!parsed)
    return config_error(path, *table.get(key), render(parsed.error()));
  out = *parsed;
  return {};
}

caf::error read_positive(const std::string& path, const toml::table& table, const char* key,
                         int64_t& out) {
  auto node = table.get(key);
  if (!node)
    return {};
  auto value = node->value<int64_t>();
  if (!value || *value <= 0)
    return config_error(path, *node, std::string{"'"} + key + "' must be a positive integer");
  out = *value;
  return {};
}

} // namespace

caf::error load_node_config(const std::string& path, node_options& opts) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    if (src.begin.line == 0)
      return make_error(errc::invalid_config, path + ": " + std::string{e.description()});
    return make_error(errc::invalid_config, where(path, src) + ": " + std::string{e.description()});
  }
  if (auto err = check_keys(path, root, "", {"node", "cluster"}))
    return err;
  if (auto node = root["node"].as_table()) {
    if (auto err = check_keys(path, *node, "node.",
                              {"name", "listen", "advertise", "join", "threads", "chaos", "http"}))
      return err;
    if (auto err = read_bool(path, *node, "chaos", opts.chaos))
      return err;
    if (auto err = read_string(path, *node, "name", opts.name))
      return err;
    if (auto err = read_string(path, *node, "advertise", opts.advertise))
      return err;
    std::string http;
    if (auto err = read_string(path, *node, "http", http))
      return err;
    if (!http.empty()) {
      auto parsed = parse_http_address(http);
      if (!parsed)
        return config_error(path, *node->get("http"), render(parsed.error()));
      opts.http = *parsed;
    }
    std::optional<host_port> listen;
    if (auto err = read_endpoint(path, *node, "listen", listen))
      return err;
    if (listen)
      opts.listen = *listen;
    if (auto err = read_endpoint(path, *node, "join", opts.join))
      return err;
    int64_t threads = 0;
    if (auto err = read_positive(path, *node, "threads", threads))
      return err;
    if (threads > 0)
      opts.threads = static_cast<size_t>(threads);
  } else if (auto bad = root.get("node")) {
    return config_error(path, *bad, "'node' must be a table");
  }
  if (auto cluster = root["cluster"].as_table()) {
    if (auto err = check_keys(path, *cluster, "cluster.",
                              {"heartbeat_interval_ms", "heartbeat_timeout_ms",
                               "connect_timeout_ms", "prune_after_ms", "secret", "secret_file"}))
      return err;
    if (auto err = read_string(path, *cluster, "secret", opts.secret))
      return err;
    std::string secret_file;
    if (auto err = read_string(path, *cluster, "secret_file", secret_file))
      return err;
    if (!secret_file.empty()) {
      auto secret = read_secret_file(secret_file);
      if (!secret)
        return make_error(errc::invalid_config, path + ": " + render(secret.error()));
      opts.secret = std::move(*secret);
    }
    struct field {
      const char* key;
      std::chrono::milliseconds* target;
    };
    for (auto [key, target] : {field{"heartbeat_interval_ms", &opts.heartbeat_interval},
                               field{"heartbeat_timeout_ms", &opts.heartbeat_timeout},
                               field{"connect_timeout_ms", &opts.connect_timeout},
                               field{"prune_after_ms", &opts.prune_after}}) {
      int64_t value = 0;
      if (auto err = read_positive(path, *cluster, key, value))
        return err;
      if (value > 0)
        *target = std::chrono::milliseconds{value};
    }
  } else if (auto bad = root.get("cluster")) {
    return config_error(path, *bad, "'cluster' must be a table");
  }
  return {};
}

caf::expected<std::optional<host_port>> parse_http_address(const std::string& text) {
  if (text == "off")
    return std::optional<host_port>{};
  auto parsed = parse_host_port(text);
  if (!parsed)
    return make_error(
      errc::invalid_argument,
      "http address '" + text + "': give HOST:PORT or off (" + render(parsed.error()) + ")");
  return std::optional<host_port>{*parsed};
}

caf::error validate(const node_options& opts) {
  if (opts.name.empty())
    return make_error(errc::invalid_config, "node name is empty (use --name or [node] name)");
  if (opts.heartbeat_timeout <= opts.heartbeat_interval)
    return make_error(errc::invalid_config,
                      "heartbeat_timeout_ms must exceed heartbeat_interval_ms");
  auto& host = opts.listen.host;
  if ((host == "0.0.0.0" || host == "::") && opts.advertise.empty())
    return make_error(errc::invalid_config,
                      "listening on every interface (" + host +
                        ") needs the host other nodes "
                        "reach this one at (--advertise, DARCY_ADVERTISE or [node] advertise)");
  return {};
}

} // namespace darcy::runtime
