// TLS between nodes and clients, through CAF's OpenSSL module: with a TLS directory set, every
// actor system this process builds (a node's, a client's) publishes and connects over TLS and
// authenticates its peer against the directory's CA, both ways. A peer without a certificate
// from that CA, or without TLS at all, cannot connect. scripts/make_tls.sh makes such a
// directory: ca.pem, node.pem and node.key.
//
//   runtime::set_process_tls(*runtime::read_tls_dir("/etc/darcy/tls"));  // before any system
//   auto port = runtime::publish(agent, 7400, "0.0.0.0");                 // TLS when set
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/openssl/remote_actor.hpp>

#include "runtime/direct_connections.hpp"

namespace darcy::runtime {

struct tls_files {
  /// The directory they came from (read_tls_dir), given to the nodes a process starts.
  std::string dir;
  /// PEM files: the cluster's CA, this process's certificate (signed by it) and its key.
  std::string ca;
  std::string certificate;
  std::string key;
};

/// DIR/ca.pem, DIR/node.pem and DIR/node.key; errc::invalid_config naming the first that is
/// missing or unreadable.
caf::expected<tls_files> read_tls_dir(const std::string& dir);

/// Sets (or clears) the TLS files of every actor system this process builds from now on.
/// Call before building one (the CLI does, for --tls-dir).
void set_process_tls(std::optional<tls_files> files);
const std::optional<tls_files>& process_tls();

/// Loads CAF's OpenSSL module into `cfg` with the process's TLS files, when set.
void configure_tls(caf::actor_system_config& cfg);

/// The actor that connects to other nodes asynchronously (caf::connect_atom): the OpenSSL
/// module's when `sys` was built with TLS, the middleman's otherwise.
caf::io::middleman_actor connection_manager(caf::actor_system& sys);

/// How many TLS handshakes this process began as the connecting side and saw fail, and
/// OpenSSL's reason for the latest ("certificate verify failed"). CAF reports such a failure
/// as a refused or an ended connection depending on when it happened, so callers compare the
/// count before and after a connect to tell the two apart.
uint64_t tls_client_handshake_failures();
std::string last_tls_client_handshake_failure();

/// Publishes `whom` at host:port, over TLS when the process has TLS files; the bound port.
template <class Handle>
caf::expected<uint16_t> publish(const Handle& whom, uint16_t port, const char* host) {
  arbitrate_direct_connections(whom.home_system());
  if (process_tls())
    return caf::openssl::publish(whom, port, host, true);
  return whom.home_system().middleman().publish(whom, port, host, true);
}

/// Connects to the actor published at host:port, over TLS when the process has TLS files.
template <class Handle>
caf::expected<Handle> connect_remote(caf::actor_system& sys, const std::string& host,
                                     uint16_t port) {
  arbitrate_direct_connections(sys);
  if (process_tls())
    return caf::openssl::remote_actor<Handle>(sys, host, port);
  return sys.middleman().remote_actor<Handle>(host, port);
}

} // namespace darcy::runtime
