// How an online run tells a `darcy serve` model of a new sync: by default one POST to the model's
// :sync carrying the rows the model lacks (sync_message.hpp), so that serving hosts share no
// folder with training; or, with push_mode::folder, a POST of {"dir": FOLDER} that the serving
// copies then read themselves (one host or a shared file system).
#pragma once

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace darcy::ops::online {

enum class push_mode : uint8_t {
  /// The links the model lacks travel in the request.
  rows,
  /// The request names the sync folder.
  folder,
};

/// "rows" or "folder", and back (errc::invalid_config for another name).
std::string to_string(push_mode m);
caf::expected<push_mode> push_mode_named(const std::string& name);

/// Where syncs are pushed: a model's URL and the bearer token of a principal with manage.
struct push_target {
  /// "http://HOST:PORT/v1/models/NAME" (":sync" optional); empty: no push.
  std::string url;
  std::string token;
  push_mode mode = push_mode::rows;
};

/// errc::invalid_config when `to` is set and is not an http://HOST:PORT/PATH URL.
caf::error validate(const push_target& to);

/// What the target holds as far as its answers told: the rows checkpoint and the dense sync of
/// its last push answered 200 (empty: nothing known, so the next push carries a whole chain).
struct push_cursor {
  std::string rows;
  std::string dense;
  /// Chains the target went on to since it last got a whole one, each sent as an empty delta
  /// (read_sync's elide_full): after max_elided_chains, the next chain goes whole, so that
  /// what a copy restores stays a few chains long.
  uint32_t elided = 0;
};

/// Chains sent as empty deltas in a row, at most.
inline constexpr uint32_t max_elided_chains = 4;

/// What one push sent and got.
struct push_result {
  /// The answer's HTTP status (0 when none came).
  unsigned status = 0;
  /// The bytes of the parts it carried (0 for push_mode::folder), and whether it carried a
  /// whole chain (the target held no link of the current one, or had lost the one it was sent)
  /// or a new chain's full checkpoint as an empty delta.
  uint64_t bytes = 0;
  bool whole_chain = false;
  bool elided_full = false;
};

/// Pushes the current sync of `sync_dir` to `to`. push_mode::rows: the links after
/// cursor.rows (a new chain that starts at cursor.rows as an empty delta, unless the cursor has
/// elided max_elided_chains in a row); when the model answers 409 (it holds another link than the
/// cursor says, say after a lost or reordered push or its own restart), at once the whole chain,
/// which it restores. A 200 moves the cursor. push_mode::folder: {"dir": absolute(sync_dir)}. A
/// status other than 200 is logged with the answer's body; it is not an error, since training goes
/// on and the next sync is pushed again.
push_result push_sync(const push_target& to, const std::string& sync_dir, push_cursor& cursor);

} // namespace darcy::ops::online
