// Cap'n Proto messages as the bytes of a checkpoint file, and back: the flat form a file holds,
// and a reader over a file's bytes that refuses a truncated one and bounds its traversal by the
// file's size. Shared by the manifest and every service's part formats.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <capnp/message.h>
#include <kj/array.h>
#include <caf/expected.hpp>

namespace darcy::stores {

/// Copies floats into a Cap'n Proto list builder of the same size.
template <class Builder>
void write_floats(Builder list, std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i)
    list.set(static_cast<unsigned>(i), values[i]);
}

/// Copies a Cap'n Proto float list into `out`.
template <class Reader>
void read_floats(Reader list, std::vector<float>& out) {
  out.clear();
  out.reserve(list.size());
  for (auto v : list)
    out.push_back(v);
}

/// `message` as the flat bytes a file holds.
std::string flat_bytes(capnp::MessageBuilder& message);

/// A whole file's bytes copied into word-aligned memory; errc::corrupt_file naming `path` when
/// they are not a whole number of words (a truncated file).
caf::expected<kj::Array<capnp::word>> to_words(const std::string& bytes, const std::string& path);

/// Reader options for a message of `words` words: a traversal limit of twice its size, so that
/// a damaged file cannot make a reader loop.
capnp::ReaderOptions reader_options(size_t words);

} // namespace darcy::stores
