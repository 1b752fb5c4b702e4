// The cluster secret (the role of Erlang's cookie): every node and client of a cluster holds
// the same one. A process presents the credential derived from it to the seed's registry
// (hello) before anything else; registries and node agents refuse management messages from
// any other process. The credential crosses the wire in the clear until the transport gets TLS.
#pragma once

#include <string>

#include <caf/expected.hpp>

namespace darcy::runtime {

/// The secret in `path`, surrounding whitespace removed. Fails with errc::invalid_config when
/// the file cannot be read, is empty, or can be read by its group or others (chmod 600 it).
caf::expected<std::string> read_secret_file(const std::string& path);

/// What is sent in place of the secret: a digest of it; empty for an empty secret.
std::string credential_of(const std::string& secret);

/// Compares two credentials in time independent of where they differ.
bool same_credential(const std::string& a, const std::string& b);

/// The credential this process presents as a client (set once at the program's edge, from
/// --secret-file); empty: none.
void set_client_credential(std::string credential);
const std::string& client_credential();

} // namespace darcy::runtime
