#include "stores/embedding/embedding_store.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/std/iostream.h>

#include "compute/hash.hpp"
#include "compute/sampler.hpp"
#include "messages/checkpoint.capnp.h"
#include "messages/error.hpp"
#include "stores/embedding/shard_file.hpp"

namespace darcy::stores {

namespace {

/// compute::hash_key of every key, in a buffer reused by the calling thread: valid until this
/// thread hashes again, so a store's hashed lookup and update never call the unhashed ones.
std::span<const uint64_t> hash_keys(std::span<const std::string_view> keys) {
  thread_local std::vector<uint64_t> hashes;
  hashes.resize(keys.size());
  for (size_t k = 0; k < keys.size(); ++k)
    hashes[k] = compute::hash_key(keys[k]);
  return hashes;
}

} // namespace

caf::error embedding_store::lookup(std::span<const std::string_view> keys, std::span<float> out) {
  return lookup(keys, hash_keys(keys), out);
}

caf::error embedding_store::lookup(std::span<const std::string_view> keys,
                                   std::span<const uint64_t> hashes,
                                   std::span<const uint32_t> counts, std::span<float> out) {
  if (!counts.empty() && counts.size() != keys.size())
    return make_error(errc::invalid_argument, std::to_string(counts.size()) +
                                                " lookup counts for " +
                                                std::to_string(keys.size()) + " keys");
  auto saved = std::exchange(counts_, counts);
  auto err = lookup(keys, hashes, out);
  counts_ = saved;
  return err;
}

caf::error embedding_store::update(std::span<const std::string_view> keys,
                                   std::span<const float> grads, int64_t step) {
  return update(keys, hash_keys(keys), grads, step);
}

caf::error embedding_store::ensure_sampling_index() {
  if (sampling_)
    return {};
  auto index = std::make_unique<sample_index>(sampler_);
  if (auto err = fill_sampling_index(*index))
    return err;
  sampling_ = std::move(index);
  return {};
}

caf::error embedding_store::fill_sampling_index(sample_index& index) {
  auto none = [](std::string_view, uint64_t stored) { return stored; };
  return export_rows([&](const row_record& r) { index.set(r.key, r.frequency, none); });
}

caf::expected<sample_stats> embedding_store::sample_metadata(
  const std::vector<std::string>& positives) {
  if (auto err = ensure_sampling_index())
    return err;
  return sampling_->stats(positives, exact_reader());
}

caf::expected<sample_result> embedding_store::sample(const sample_plan& plan) {
  if (auto err = ensure_sampling_index())
    return err;
  return sampling_->draw(plan, exact_reader());
}

caf::error embedding_store::export_keys(std::span<const std::string_view> keys,
                                        const std::function<void(const row_record&)>& found,
                                        const std::function<void(std::string_view)>& missing) {
  std::unordered_set<std::string_view> wanted(keys.begin(), keys.end());
  auto err = export_rows([&](const row_record& row) {
    if (wanted.erase(row.key) > 0)
      found(row);
  });
  if (err)
    return err;
  for (auto key : keys)
    if (wanted.count(key) > 0)
      missing(key);
  return {};
}

caf::error embedding_store::prefetch(std::span<const std::string_view> keys,
                                     std::span<const uint64_t> hashes) {
  if (hashes.size() != keys.size())
    return make_error(errc::dimension_mismatch, std::to_string(keys.size()) + " keys with " +
                                                  std::to_string(hashes.size()) + " hashes");
  return {};
}

caf::error embedding_store::remove_rows(std::span<const std::string_view>) {
  return make_error(errc::unsupported, "this store's rows cannot be removed one by one");
}

caf::error embedding_store::export_to(std::ostream& out, const std::string& name) {
  capnp::MallocMessageBuilder message;
  if (auto rows = fill_shard_file(message, name, *this); !rows)
    return std::move(rows.error());
  try {
    kj::std::StdOutputStream stream{out};
    capnp::writeMessage(stream, message);
  } catch (const kj::Exception& e) {
    return make_error(errc::io_error, std::string{"export: "} + e.getDescription().cStr());
  }
  return out ? caf::error{} : make_error(errc::io_error, "export: the stream failed");
}

caf::error embedding_store::import_from(std::istream& in) {
  try {
    kj::std::StdInputStream stream{in};
    capnp::ReaderOptions opts;
    opts.traversalLimitInWords = uint64_t{1} << 40;
    capnp::InputStreamMessageReader reader{stream, opts};
    return import_shard_file(reader.getRoot<ShardFile>(), *this, "import stream");
  } catch (const kj::Exception& e) {
    return make_error(errc::corrupt_file, std::string{"import: "} + e.getDescription().cStr());
  }
}

} // namespace darcy::stores
