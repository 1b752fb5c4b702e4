// Building and reading ShardFile messages (messages/checkpoint.capnp): one embedding's rows with
// their whole state. Shared by checkpoint files and store export/import streams.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include <capnp/message.h>
#include <caf/error.hpp>

#include "messages/checkpoint.capnp.h"
#include "stores/checkpoint/capnp_bytes.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::stores {

/// Fills `message` with every row of `store` (embedding `name`); returns the row count, or the
/// store's error when it cannot read its rows.
caf::expected<uint64_t> fill_shard_file(capnp::MessageBuilder& message, const std::string& name,
                                        embedding_store& store);

/// Fills `message` with a delta part of embedding `name`: the rows of those of `keys` that
/// `store` holds, and the others as deleted keys. Returns the row count, or the store's error.
caf::expected<uint64_t> fill_delta_file(capnp::MessageBuilder& message, const std::string& name,
                                        embedding_store& store,
                                        std::span<const std::string_view> keys);

/// Calls f for every row of `file` after checking its dim against `dim`; `context` names the
/// source in errors (errc::dimension_mismatch).
caf::error for_each_shard_row(ShardFile::Reader file, uint32_t dim, const std::string& context,
                              const std::function<caf::error(const row_record&)>& f);

/// Imports every row of `file` into `store`.
caf::error import_shard_file(ShardFile::Reader file, embedding_store& store,
                             const std::string& context);

} // namespace darcy::stores
