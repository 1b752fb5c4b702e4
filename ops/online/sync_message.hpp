// A sync as one message from a training run to a serving copy: the links of the sync folder's
// chain that the copy lacks (each delta's changed rows and deleted keys, or a whole chain from
// its full checkpoint) and the newest dense weights, every part's bytes inside. `darcy serve`
// takes it as the body of POST /v1/models/NAME:sync, so serving needs no training host's disk.
//
//   auto m = read_sync(sync_dir, held_rows, held_dense);    // the links after what is held
//   auto body = encode(*m);   // caf::expected<std::string>  ...  auto back =
//   decode_sync_message(body);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

#include "stores/checkpoint/checkpoint_link.hpp"

namespace darcy::ops::online {

struct sync_message {
  /// Links of one chain, in order: the deltas after the link the receiver holds, or the chain
  /// from its full checkpoint (the receiver restores it).
  std::vector<stores::checkpoint_link> rows;
  /// The newest dense sync (at most one), when the receiver lacks it.
  std::vector<stores::checkpoint_link> dense;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sync_message& x) {
  return f(caf::meta::type_name("sync_message"), x.rows, x.dense);
}

/// Whether `body` starts as an encoded sync_message does (a JSON body never does).
bool is_sync_message(std::string_view body);

/// The message's bytes; the serializer's error (an allocation that failed) otherwise.
caf::expected<std::string> encode(const sync_message& m);

/// errc::corrupt_file for bytes that are not one whole encoded sync_message.
caf::expected<sync_message> decode_sync_message(std::string_view bytes);

/// What brings a receiver that holds rows checkpoint `held_rows` and dense sync `held_dense`
/// (empty: none) to the current sync of `sync_dir` (online_trainer's folder): the links after
/// `held_rows` when the current chain holds it, else the whole chain; the dense sync unless it
/// is `held_dense`. With `elide_full`, when the current chain's full checkpoint is the state of
/// a link of the previous chain (checkpoint_manifest::same_as) that comes at or after
/// `held_rows`, the receiver gets the previous chain's links after `held_rows`, then that full
/// checkpoint as an empty delta on the last of them (no part, no table), then the rest: its
/// chain goes on, and no snapshot of every row crosses the wire. An empty message when it holds
/// both. The folder's errors (errc::not_found when it holds no sync, errc::corrupt_file for a
/// damaged part).
caf::expected<sync_message> read_sync(const std::string& sync_dir, const std::string& held_rows,
                                      const std::string& held_dense, bool elide_full = false);

/// Whether one of `m`'s rows links is a full checkpoint that read_sync sent as an empty delta
/// (elide_full).
bool carries_elided_full(const sync_message& m);

/// The bytes of the parts a message carries (what its rows and dense weights weigh on the
/// wire, before the manifests).
uint64_t part_bytes(const sync_message& m);

} // namespace darcy::ops::online
