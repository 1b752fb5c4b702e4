// Data of the example app: labelled lines "label<TAB>text", turned into hashed features, and a
// generator of a planted problem (a label is 1 when its line holds words of the positive
// vocabulary) so that the tutorial needs no download.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

namespace darcy::examples {

struct labelled_example {
  float label = 0;
  /// Embedding keys: one per word ("f<hash % buckets>"), then "bias".
  std::vector<std::string> keys;
};

/// The key of a word's bucket.
std::string feature_key(std::string_view word, uint64_t buckets);

/// Reads every line of `path`. errc::not_found for a missing file; errc::invalid_argument
/// naming file:line for a label other than 0 or 1, a missing tab or no words.
caf::expected<std::vector<labelled_example>> read_examples(const std::string& path,
                                                           uint64_t buckets);

/// Writes `lines` lines of the planted problem to `path`, deterministically for a seed.
caf::error generate_examples(const std::string& path, uint32_t lines, uint64_t seed);

} // namespace darcy::examples
