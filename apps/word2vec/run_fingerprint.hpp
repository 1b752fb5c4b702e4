// What a word2vec checkpoint records about the run that wrote it: the input position, the
// corpus (size and a hash of its first blocks) and every setting that changes the model. A
// resume compares it with the new run and refuses any difference, naming it.
#pragma once

#include <cstdint>
#include <string>

#include <caf/expected.hpp>

#include "apps/word2vec/corpus.hpp"
#include "apps/word2vec/trainer.hpp"

namespace darcy::word2vec {

/// Bytes of corpus text hashed into the fingerprint, from the start.
inline constexpr size_t fingerprint_head_bytes = size_t{1} << 20;

/// "batch=N key=value ...": the position after `batches` batches of the run of `opts` on `c`.
/// Thread counts and output paths are not part of it: they do not change what is trained.
std::string encode_position(uint64_t batches, const corpus& c, const train_options& opts);

/// The batch to resume at. Fails with errc::corrupt_file for a position that does not parse,
/// and with errc::invalid_argument naming each setting or corpus property that differs (as
/// "--flag: checkpoint A, this run B"). A position of the older form "batch=N" carries no
/// fingerprint and is accepted.
caf::expected<uint64_t> decode_position(const std::string& text, const corpus& c,
                                        const train_options& opts);

} // namespace darcy::word2vec
