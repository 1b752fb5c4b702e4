#include "stores/checkpoint/capnp_bytes.hpp"

#include <cstring>

#include <capnp/serialize.h>

#include "messages/error.hpp"

namespace darcy::stores {

std::string flat_bytes(capnp::MessageBuilder& message) {
  auto words = capnp::messageToFlatArray(message);
  auto bytes = words.asChars();
  return {bytes.begin(), bytes.size()};
}

caf::expected<kj::Array<capnp::word>> to_words(const std::string& bytes, const std::string& path) {
  if (bytes.size() % sizeof(capnp::word) != 0)
    return make_error(errc::corrupt_file,
                      path + ": truncated (" + std::to_string(bytes.size()) + " bytes)");
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  return words;
}

capnp::ReaderOptions reader_options(size_t words) {
  capnp::ReaderOptions opts;
  opts.traversalLimitInWords = words * 2 + 1024;
  return opts;
}

} // namespace darcy::stores
