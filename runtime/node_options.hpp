// What a node is told at start: its name, where it listens, which seed it joins, and the
// cluster timing. Read from a TOML file (load_node_config) and then overridden by CLI flags.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <caf/error.hpp>

#include "runtime/host_port.hpp"

namespace darcy::runtime {

struct node_options {
  std::string name;
  host_port listen{"127.0.0.1", 0};
  /// The host other nodes reach this one at; empty: the listen host. Needed when listening on
  /// every interface (0.0.0.0 or ::), as in a container: a pod's DNS name, say.
  std::string advertise;
  /// The seed to join; none makes this node the seed, which hosts the registry.
  std::optional<host_port> join;
  /// Members send a heartbeat this often.
  std::chrono::milliseconds heartbeat_interval{500};
  /// The seed declares a member down after this long without a heartbeat (or at once when its
  /// connection drops).
  std::chrono::milliseconds heartbeat_timeout{3000};
  /// The seed forgets a member this long after it went down or left.
  std::chrono::milliseconds prune_after{60000};
  /// Bound on each request made while joining and leaving.
  std::chrono::milliseconds connect_timeout{5000};
  /// The cluster secret ([cluster] secret, or the file named by [cluster] secret_file); empty:
  /// the one given by --secret-file, if any.
  std::string secret;
  /// Scheduler threads; 0 lets CAF choose (one per core).
  size_t threads = 0;
  /// Put every actor spawned for a remote caller behind a chaos gate, so that `darcy chaos
  /// disrupt` can reach its traffic ([node] chaos, --chaos). Off by default: a gate is one
  /// more mailbox hop per message (about 15% of remote lookup throughput).
  bool chaos = false;
  /// Where GET /metrics and the status page are served ([node] http, --http); an empty host
  /// means the listen host. None: not served.
  std::optional<host_port> http = host_port{"", 0};
};

/// "off" (none), or HOST:PORT; errc::invalid_argument otherwise.
caf::expected<std::optional<host_port>> parse_http_address(const std::string& text);

/// Reads `path` into `opts`, keeping fields the file does not set. Fails with
/// errc::invalid_config naming the file, the line and the problem: a syntax error, an unknown
/// key, or a value of the wrong type or range.
caf::error load_node_config(const std::string& path, node_options& opts);

/// Checks the combination: a non-empty name, timeouts that make sense, an advertised host when
/// listening on every interface.
caf::error validate(const node_options& opts);

} // namespace darcy::runtime
