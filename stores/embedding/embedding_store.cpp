#include "stores/embedding/embedding_store.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>
#include <unordered_set>

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

caf::error embedding_store::update(std::span<const std::string_view> keys,
                                   std::span<const float> grads, int64_t step) {
  return update(keys, hash_keys(keys), grads, step);
}

caf::expected<sample_stats> embedding_store::sample_metadata(
  const std::vector<std::string>& positives) {
  std::map<uint64_t, uint64_t> histogram;
  std::unordered_set<std::string_view> wanted(positives.begin(), positives.end());
  sample_stats result;
  auto err = export_rows([&](const row_record& r) {
    ++histogram[r.frequency];
    if (wanted.count(r.key) > 0) {
      result.positives.emplace_back(r.key);
      result.positive_freqs.push_back(r.frequency);
    }
  });
  if (err)
    return err;
  for (auto [freq, count] : histogram) {
    result.freqs.push_back(freq);
    result.counts.push_back(count);
  }
  return result;
}

caf::expected<sample_result> embedding_store::sample(const sample_plan& plan) {
  sample_result result;
  if (plan.count == 0)
    return result;
  std::unordered_set<std::string_view> excluded(plan.positives.begin(), plan.positives.end());
  std::vector<std::string> keys;
  std::vector<double> weights;
  auto err = export_rows([&](const row_record& r) {
    if (excluded.count(r.key) > 0)
      return;
    auto f = std::lower_bound(plan.freqs.begin(), plan.freqs.end(), r.frequency);
    if (f == plan.freqs.end() || *f != r.frequency)
      return;
    keys.emplace_back(r.key);
    weights.push_back(plan.weights[static_cast<size_t>(f - plan.freqs.begin())]);
  });
  if (err)
    return err;
  auto dist = compute::candidate_distribution::from_weights(weights);
  if (!dist)
    return make_error(errc::invalid_argument,
                      "no candidate for " + std::to_string(plan.count) + " samples");
  std::mt19937_64 rng{plan.seed};
  for (uint32_t n = 0; n < plan.count; ++n) {
    auto id = dist->draw(rng);
    result.keys.push_back(keys[id]);
    result.is_positive.push_back(0);
    result.probs.push_back(weights[id] / plan.total_weight);
  }
  return result;
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
