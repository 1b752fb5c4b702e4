// Which role of a distributed Estimator job this process plays, from a DARCY_CONFIG JSON (the
// analogue of TF_CONFIG) or from flags: the job's cluster (the address of every task by type)
// and this task's type and index.
//
//   DARCY_CONFIG='{"cluster": {"chief": ["10.0.0.1:7100"], "ps": ["10.0.0.2:7100"],
//                              "worker": ["10.0.0.3:7100", "10.0.0.4:7100"]},
//                  "task": {"type": "worker", "index": 1}}'
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "runtime/host_port.hpp"

namespace darcy::ops::estimator {

enum class task_type : uint8_t { chief, worker, ps, evaluator };

std::string to_string(task_type t);

struct role_config {
  /// Every task's address by type; the chief's is the cluster's seed. Tasks other than the
  /// chief may give port 0 (they only join it), and so may the chief in its own config
  /// (it then listens on a free port and prints it).
  std::map<task_type, std::vector<runtime::host_port>> cluster;
  task_type type = task_type::chief;
  uint32_t index = 0;

  /// Tasks of `t` in the cluster.
  size_t count(task_type t) const;
  /// The chief's address.
  const runtime::host_port& chief() const { return cluster.at(task_type::chief).front(); }
  /// This task's own address.
  const runtime::host_port& address() const { return cluster.at(type).at(index); }
  /// This task's node name: "<type>-<index>".
  std::string node_name() const;
};

/// Parses a DARCY_CONFIG document. errc::invalid_config names the problem: not JSON, an
/// unknown task type, an address that is not HOST:PORT, not exactly one chief, no parameter
/// server or worker, a task index beyond its type's list, or (for other tasks) a chief
/// without a port.
caf::expected<role_config> parse_role_config(const std::string& json);

/// The cluster part of a DARCY_CONFIG document (without "task"), with this task from flags.
caf::expected<role_config> parse_role_config(const std::string& cluster_json,
                                             const std::string& type, uint32_t index);

} // namespace darcy::ops::estimator
