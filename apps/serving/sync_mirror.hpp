// A served model's own copy of its training run's sync folder, fed by sync messages
// (ops/online/sync_message.hpp) that arrive as :sync bodies: each message is checked against the
// model's tables and against the link the model holds, then installed, and the model follows the
// copy as it would follow the folder. Serving hosts so need no access to training hosts' disks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include <caf/error.hpp>

#include "messages/embedding/embedding_config.hpp"
#include "ops/online/sync_message.hpp"

namespace darcy::serving {

/// A :sync request's body: a sync message, or {"dir": SYNC_DIR}, a folder this host reads.
struct sync_body {
  std::optional<ops::online::sync_message> message;
  std::string dir;
};

/// errc::invalid_argument for a body that is neither, a message that does not decode
/// included (the request's bytes, not this server's files).
caf::expected<sync_body> parse_sync_body(const std::string& body);

class sync_mirror {
public:
  /// Under `dir`; empty: a folder of its own under the system's temporary directory, made at
  /// the first install and removed with the mirror. Dense syncs are of `dense_service` (an
  /// Estimator's by default; a PyTorch export's are ops::torch_dense_sync_service).
  explicit sync_mirror(std::string dir = {}, std::string dense_service = {});
  ~sync_mirror();
  sync_mirror(const sync_mirror&) = delete;
  sync_mirror& operator=(const sync_mirror&) = delete;

  /// The folder to follow; empty before the first install of a mirror without a `dir`.
  const std::string& dir() const { return dir_; }

  /// Installs `m`'s links for a model that holds rows checkpoint `held` (empty: its export's
  /// snapshot only) and serves `tables`. Refuses, installing nothing:
  /// errc::invalid_argument for a link of another model or table layout (a table the model
  /// lacks or with another dimension, a link of another service); errc::out_of_order for
  /// deltas that do not start at `held` in this mirror (a lost or reordered message, or a
  /// mirror that is new): the sender then sends the whole chain, a full checkpoint first,
  /// which is always taken; errc::corrupt_file for links that do not chain or parts that do
  /// not match their manifests; errc::io_error when the folder cannot be written.
  caf::error install(const ops::online::sync_message& m, const std::string& held,
                     const std::vector<de_config>& tables);

private:
  caf::error check(const ops::online::sync_message& m, const std::string& held,
                   const std::vector<de_config>& tables) const;

  std::string dir_;
  std::string dense_service_;
  bool owned_ = false;
};

} // namespace darcy::serving
