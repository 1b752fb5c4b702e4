#include "ops/estimator/distributed/roles.hpp"

#include <nlohmann/json.hpp>

#include "messages/error.hpp"

namespace darcy::ops::estimator {

namespace {

constexpr task_type all_types[] = {task_type::chief, task_type::worker, task_type::ps,
                                   task_type::evaluator};

/// `source` names where the configuration came from: DARCY_CONFIG, or a flag.
caf::error bad_config(const std::string& source, const std::string& what) {
  return make_error(errc::invalid_config, source + ": " + what);
}

caf::expected<task_type> parse_type(const std::string& source, const std::string& name) {
  for (auto t : all_types)
    if (to_string(t) == name)
      return t;
  return bad_config(source, "unknown task type '" + name + "' (chief, worker, ps or evaluator)");
}

caf::error check(const std::string& source, const role_config& r) {
  auto bad = [&](const std::string& what) { return bad_config(source, what); };
  if (r.count(task_type::chief) != 1)
    return bad("the cluster must have exactly one chief");
  if (r.count(task_type::ps) == 0 || r.count(task_type::worker) == 0)
    return bad("the cluster needs at least one ps and one worker");
  if (r.index >= r.count(r.type))
    return bad("task " + to_string(r.type) + " " + std::to_string(r.index) +
               " is not in the cluster (" + std::to_string(r.count(r.type)) + " " +
               to_string(r.type) + " task(s))");
  if (r.chief().port == 0 && r.type != task_type::chief)
    return bad("the chief needs a port: the other tasks join it");
  return {};
}

caf::expected<role_config> parse_cluster(const std::string& source, const nlohmann::json& doc) {
  auto bad = [&](const std::string& what) { return bad_config(source, what); };
  if (!doc.is_object() || !doc.contains("cluster") || !doc["cluster"].is_object())
    return bad("expected an object with a \"cluster\" object");
  role_config out;
  for (auto& [name, addresses] : doc["cluster"].items()) {
    auto type = parse_type(source, name);
    if (!type)
      return std::move(type.error());
    if (!addresses.is_array())
      return bad("cluster." + name + " must be a list of HOST:PORT");
    auto& list = out.cluster[*type];
    for (auto& a : addresses) {
      auto address = a.is_string() ? runtime::parse_host_port(a.get<std::string>())
                                   : caf::expected<runtime::host_port>{bad("not a string")};
      if (!address)
        return bad("cluster." + name + ": '" + a.dump() + "' is not HOST:PORT");
      list.push_back(*address);
    }
  }
  return out;
}

} // namespace

std::string to_string(task_type t) {
  switch (t) {
    case task_type::chief:
      return "chief";
    case task_type::worker:
      return "worker";
    case task_type::ps:
      return "ps";
    case task_type::evaluator:
      return "evaluator";
  }
  return "?";
}

size_t role_config::count(task_type t) const {
  auto it = cluster.find(t);
  return it == cluster.end() ? 0 : it->second.size();
}

std::string role_config::node_name() const {
  return to_string(type) + "-" + std::to_string(index);
}

caf::expected<role_config> parse_role_config(const std::string& json) {
  const std::string source = "DARCY_CONFIG";
  auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded())
    return bad_config(source, "not JSON");
  auto out = parse_cluster(source, doc);
  if (!out)
    return out;
  auto task = doc.find("task");
  if (task == doc.end() || !task->is_object() || !task->contains("type") ||
      !(*task)["type"].is_string())
    return bad_config(source, "expected \"task\": {\"type\": ..., \"index\": ...}");
  auto type = parse_type(source, (*task)["type"].get<std::string>());
  if (!type)
    return std::move(type.error());
  out->type = *type;
  auto index = task->value("index", nlohmann::json(0));
  if (!index.is_number_integer() || index.get<int64_t>() < 0)
    return bad_config(source, "task.index must be a number >= 0");
  out->index = index.get<uint32_t>();
  if (auto err = check(source, *out))
    return err;
  return out;
}

caf::expected<role_config> parse_role_config(const std::string& cluster_json,
                                             const std::string& type, uint32_t index) {
  auto parsed_type = parse_type("--task-type", type);
  if (!parsed_type)
    return std::move(parsed_type.error());
  const std::string source = "--cluster-spec";
  if (cluster_json.empty())
    return bad_config(source, "--task-type " + type + " needs the cluster's addresses, as JSON");
  auto doc = nlohmann::json::parse(cluster_json, nullptr, false);
  if (doc.is_discarded())
    return bad_config(source, "not JSON");
  if (doc.is_object() && !doc.contains("cluster"))
    doc = nlohmann::json{{"cluster", doc}};
  auto out = parse_cluster(source, doc);
  if (!out)
    return out;
  out->type = *parsed_type;
  out->index = index;
  if (auto err = check(source, *out))
    return err;
  return out;
}

} // namespace darcy::ops::estimator
