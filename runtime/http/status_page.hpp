// What every node serves over HTTP: GET /metrics (the process's metrics in the Prometheus text
// format), GET / (a status page: the cluster's members and services, this node's shard sizes,
// restarts and request counts, and the loss curves of jobs running here, refreshed every two
// seconds) and GET /status.json (the same as JSON). The page is plain server-side HTML with
// inline SVG, so it needs no script and no network beyond the node.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "messages/cluster/cluster_interfaces.hpp"
#include "runtime/http/http_server.hpp"
#include "runtime/metrics.hpp"

namespace darcy::runtime {

/// What a status page shows.
struct node_view {
  std::string node;
  /// The registry's view; none when it could not be asked (cluster_error says why).
  std::optional<cluster_status> cluster;
  std::string cluster_error;
  std::vector<std::pair<metric_labels, double>> store_rows;
  std::vector<std::pair<metric_labels, double>> restarts;
  std::vector<std::pair<metric_labels, double>> requests;
  std::map<std::string, std::vector<curve_point>> curves;
};

/// The view of this process, with the registry asked within `timeout`.
node_view current_view(caf::actor_system& sys, const registry_actor& registry,
                       const std::string& node, std::chrono::milliseconds timeout);

std::string render_status_page(const node_view& view);
std::string render_status_json(const node_view& view);

/// Serves the three routes (HEAD and other methods: 405; other paths: 404).
http_handler node_http_handler(caf::actor_system& sys, registry_actor registry, std::string node,
                               std::chrono::milliseconds timeout);

} // namespace darcy::runtime
