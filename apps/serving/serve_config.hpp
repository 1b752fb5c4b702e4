// The serving front end's configuration file (TOML): bearer tokens and the principals they
// stand for, each model's ACL and quotas, and the HTTP limits. Without a file, or without a
// [tokens] table, no token is asked for and every request comes from principal "anonymous";
// then only clients on loopback may load or unload a model (may_manage_from).
//
//   [tokens]
//   "s3cret-alice" = "alice"
//   [http]
//   default_deadline_ms = 1000     # also max_deadline_ms, max_body_bytes, max_sync_bytes, max_k
//   [models.songs]                 # [defaults] holds the rules of models not listed
//   query = ["alice", "bob"]       # "*": every principal (the default of both lists)
//   manage = ["alice"]
//   [[models.songs.quotas]]        # token buckets, first match per (principal, app) applies
//   principal = "bob"
//   app = "*"
//   rate = 50.0                    # requests per second
//   burst = 10.0
#pragma once

#include <map>
#include <string>

#include <caf/expected.hpp>

#include "messages/serving/serving_values.hpp"

namespace darcy::serving {

inline constexpr const char* anonymous_principal = "anonymous";

struct serve_config {
  /// Bearer token -> principal. Empty: no authentication.
  std::map<std::string, std::string> tokens;
  access_rules defaults;
  std::map<std::string, access_rules> models;
  uint32_t default_deadline_ms = 1000;
  uint32_t max_deadline_ms = 60000;
  size_t max_body_bytes = 1 << 20;
  /// The body of a :sync request, which may carry a sync's rows (ops/online/sync_message.hpp).
  size_t max_sync_bytes = size_t{1} << 30;
  uint32_t max_k = 1000;

  /// The rules of `model`: its own, else the defaults.
  const access_rules& rules_of(const std::string& model) const;
};

/// Whether a client at IP address `peer` may ask for :load or :unload at all (the model's ACL
/// still applies after): always when bearer tokens are configured; without tokens, only from a
/// loopback address, else errc::permission_denied saying how to open it. An empty or
/// unparsable `peer` counts as remote.
caf::error may_manage_from(const serve_config& config, const std::string& peer);

/// The line `darcy serve` prints at start about who may load and unload models.
std::string manage_policy_line(const serve_config& config);

/// Parses the file; errc::invalid_config naming the file, the key and the problem (a token
/// mapped to a non-string, a quota without a positive rate and burst, a deadline of 0...).
caf::expected<serve_config> load_serve_config(const std::string& path);

/// The same, from text (`origin` names it in errors).
caf::expected<serve_config> parse_serve_config(const std::string& text, const std::string& origin);

} // namespace darcy::serving
