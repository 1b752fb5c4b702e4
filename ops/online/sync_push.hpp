// How an online run tells a `darcy serve` model that its sync folder has a new checkpoint: one
// POST of {"dir": FOLDER} to the model's :sync, which its serving copies then follow. The push
// names the folder; the rows stay on disk.
#pragma once

#include <string>

#include <caf/error.hpp>

namespace darcy::ops::online {

/// Where syncs are pushed: a model's URL and the bearer token of a principal with manage.
struct push_target {
  /// "http://HOST:PORT/v1/models/NAME" (":sync" optional); empty: no push.
  std::string url;
  std::string token;
};

/// errc::invalid_config when `to` is set and is not an http://HOST:PORT/PATH URL.
caf::error validate(const push_target& to);

/// POSTs {"dir": absolute(sync_dir)} to to.url's :sync and returns the answer's HTTP status (0
/// when none came). A status other than 200 is logged with the answer's body; it is not an
/// error, since training goes on and the next sync is pushed again.
unsigned push_sync(const push_target& to, const std::string& sync_dir);

} // namespace darcy::ops::online
