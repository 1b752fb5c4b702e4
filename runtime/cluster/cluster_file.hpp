// The file `darcy cluster up` writes (DIR/cluster.json): the nodes of a local cluster, the seed
// first, with their addresses and processes, so that `darcy cluster down` can stop them and
// every command that needs a seed can be given the file instead of an address.
//
//   auto seed = runtime::resolve_seed("build/cluster");   // or "127.0.0.1:7400"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "runtime/host_port.hpp"

namespace darcy::runtime {

/// The name of the file inside a cluster directory.
inline constexpr const char* cluster_file_name = "cluster.json";

struct cluster_member {
  std::string name;
  host_port address;
  /// The node's process on this machine.
  int64_t pid = 0;
  /// Where its stdout and stderr go.
  std::string log;
};

struct cluster_file {
  /// The seed first.
  std::vector<cluster_member> nodes;
  /// The secret the nodes were started with, if any.
  std::string secret_file;
  /// With --netns: what runtime::netns_network::remove takes down; empty otherwise.
  std::string netns;
};

/// Writes `c` to `path` atomically. errc::io_error when it cannot.
caf::error write_cluster_file(const std::string& path, const cluster_file& c);

/// errc::not_found for no file; errc::corrupt_file naming the problem for a file that is not one
/// write_cluster_file wrote, or that lists no node.
caf::expected<cluster_file> read_cluster_file(const std::string& path);

/// The seed's address from `text`: HOST:PORT, or the path of a cluster file or of the directory
/// that holds one. errc::invalid_argument for text that is neither.
caf::expected<host_port> resolve_seed(const std::string& text);

} // namespace darcy::runtime
