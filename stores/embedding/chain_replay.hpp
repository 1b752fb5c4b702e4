// The embedding service's replay of a chain of incremental checkpoints (read_chain): a delta's
// parts hold only the rows changed since its base and the keys removed, so a shard's rows after
// the chain are its full checkpoint's with each delta applied in order, whatever shard count
// wrote each link.
//
//   auto chain = stores::read_chain(root, *root.read_manifest());   // full first
//   stores::replay_chain(root.root(), *chain, "words", 2, 4, [&](const row_record& r) { ... });
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "messages/checkpoint.hpp"
#include "stores/checkpoint/checkpoint_chain.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::stores {

/// A row with its whole state, owning its bytes.
struct stored_row {
  std::string key;
  std::vector<float> values, slots;
  uint64_t frequency = 0, updates = 0;
  int64_t last_update = 0;
  row_record record() const { return {key, values, slots, frequency, updates, last_update}; }
};

/// What one checkpoint of a chain changes in embedding `name` for shard `index` of `count`:
/// the rows it writes, the keys it deletes, and its whole parts, each of which replaces every
/// row its shard (of the link's shard_count) held before. `present` is false when the link
/// holds no such embedding.
struct link_changes {
  bool present = false;
  de_config config;
  std::vector<stored_row> rows;
  std::vector<std::string> deleted;
  std::vector<uint32_t> whole_parts;
};

/// Reads (and checks) every part of `name` in `link` (a checkpoint under `dir`).
caf::expected<link_changes> read_link(const std::string& dir, const checkpoint_manifest& link,
                                      const std::string& name, uint32_t index, uint32_t count);

/// Calls f once for every row of embedding `name` that shard `index` of `count` holds after the
/// whole chain: the rows of its full checkpoint, then each delta's changes (changed rows
/// replace, deleted keys go; a part of a delta that is not itself a delta holds every row its
/// shard had then). Rows come in no particular order. The embedding's config is the newest
/// link's. Every part is read (and checked) before f is first called; a failure leaves f
/// uncalled. Memory: the shard's rows are held while the chain is replayed.
caf::error replay_chain(const std::string& dir, const std::vector<checkpoint_manifest>& chain,
                        const std::string& name, uint32_t index, uint32_t count,
                        const std::function<caf::error(const row_record&)>& f);

} // namespace darcy::stores
