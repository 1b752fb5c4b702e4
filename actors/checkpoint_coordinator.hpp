// The one coordinator of checkpoints, shared by every service that saves state spread over
// several actors (the embedding master over its shards, the WALS chief over the factor
// shards). It asks every part for its files under a fresh checkpoint id, builds the manifest
// from their answers and commits it through stores/checkpoint/checkpoint_transaction:
// manifest last and atomic, then retention. A part that fails discards the new checkpoint's
// directory, so the previous checkpoint stays current. Sequencing only: every file is written by
// stores/.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "actors/fan_out.hpp"
#include "messages/checkpoint.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/checkpoint_transaction.hpp"

namespace darcy::actors {

/// Sends request(part, id) to each of `parts` parts (a CAF request handle answering Reply),
/// then commits assemble(replies) with `checkpoint` set to id, keeping the `keep` newest
/// checkpoints. `done` gets the committed manifest or the first error; on error the directory
/// of `id` is discarded. Returns the fan-out, so that the caller can fail it at once when a
/// part is known to be lost. With `retry`, a part is asked again under the same id: parts must
/// answer a repeated request without writing again. `id` must be fresh (checkpoint_dir::new_id);
/// the caller may have written parts of its own under it already.
template <class Reply, class Request, class Assemble>
std::shared_ptr<fan_out_state> take_checkpoint_as(
  const stores::checkpoint_dir& root, const std::string& id, size_t keep, size_t parts,
  Request request, Assemble assemble, std::function<void(caf::expected<checkpoint_manifest>)> done,
  retry_policy retry = {}) {
  auto replies = std::make_shared<std::vector<Reply>>(parts);
  auto t = std::make_shared<stores::checkpoint_transaction>(root, id);
  return fan_out<Reply>(
    all_targets(parts),
    [=](size_t part, uint32_t attempt) mutable {
      return detail::send_attempt(request, attempt, part, id);
    },
    [replies](size_t part, Reply& reply) { (*replies)[part] = std::move(reply); },
    [=](caf::error err) {
      if (err) {
        t->discard();
        return done(std::move(err));
      }
      checkpoint_manifest manifest = assemble(*replies);
      manifest.checkpoint = id;
      if (auto commit_err = t->commit(manifest, keep))
        return done(std::move(commit_err));
      done(std::move(manifest));
    },
    std::move(retry));
}

/// take_checkpoint_as under a fresh id made from `label`.
template <class Reply, class Request, class Assemble>
std::shared_ptr<fan_out_state> take_checkpoint(
  const stores::checkpoint_dir& root, const std::string& label, size_t keep, size_t parts,
  Request request, Assemble assemble, std::function<void(caf::expected<checkpoint_manifest>)> done,
  retry_policy retry = {}) {
  return take_checkpoint_as<Reply>(root, stores::checkpoint_dir::new_id(label), keep, parts,
                                   std::move(request), std::move(assemble), std::move(done),
                                   std::move(retry));
}

} // namespace darcy::actors
