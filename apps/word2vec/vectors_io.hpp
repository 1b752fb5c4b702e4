// Word vectors in word2vec.c's formats: text ("count dim" then "word v1 ... vd" per line) and
// binary (the same header, then "word " and dim little-endian floats per word).
#pragma once

#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/top_k.hpp"

namespace darcy::word2vec {

struct word_vectors {
  /// Most frequent first, as word2vec.c writes them.
  std::vector<std::string> words;
  compute::row_matrix vectors;
};

/// The row of `word` in `v` (compared exactly), or errc::not_found saying it is not in the
/// model.
caf::expected<Eigen::Index> find_word(const word_vectors& v, const std::string& word);

/// errc::not_found for `word`, as find_word and the service's neighbours report it.
caf::error word_not_in_model(const std::string& word);

enum class vectors_format { text, binary };

caf::error write_vectors(const word_vectors& v, const std::string& path, vectors_format format);

/// Reads either format (told apart by the bytes after the first word). Fails with
/// errc::not_found, or errc::corrupt_file naming the entry for a truncated or malformed file.
caf::expected<word_vectors> read_vectors(const std::string& path);

} // namespace darcy::word2vec
