#include "stores/embedding/de_config.hpp"

#include <cctype>
#include <filesystem>

#include "compute/finite.hpp"
#include "compute/initializer.hpp"
#include "compute/rules/rule_registry.hpp"
#include "messages/error.hpp"
#include "stores/embedding/admission.hpp"
#include "stores/embedding/indexed_store.hpp"
#include "stores/embedding/leveldb_store.hpp"
#include "stores/embedding/memory_store.hpp"
#include "stores/embedding/redis_client.hpp"
#include "stores/embedding/redis_store.hpp"

namespace darcy::stores {

namespace {

memory_store_options memory_options(const de_config& cfg) {
  memory_store_options opts;
  opts.sampler = cfg.sampler;
  opts.dim = cfg.dim;
  opts.init = cfg.init;
  opts.optimizer = cfg.optimizer;
  opts.admission = cfg.admission;
  opts.eviction = cfg.eviction;
  opts.read_only = cfg.read_only;
  opts.default_value = cfg.default_value;
  return opts;
}

} // namespace

caf::error validate(const de_config& cfg) {
  auto bad = [&](const std::string& what) {
    return make_error(errc::invalid_config, "embedding '" + cfg.name + "': " + what);
  };
  if (cfg.name.empty() || cfg.name.size() > 128)
    return make_error(errc::invalid_config, "an embedding needs a name of 1 to 128 characters");
  for (unsigned char c : cfg.name)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.')
      return bad("name may hold only letters, digits, '_', '-' and '.'");
  if (cfg.dim == 0 || cfg.dim > 65536)
    return bad("dim must be in 1..65536");
  if (cfg.max_batch == 0)
    return bad("max_batch must be > 0");
  if (!cfg.default_value.empty() && cfg.default_value.size() != cfg.dim)
    return bad("default_value has " + std::to_string(cfg.default_value.size()) +
               " values for dim " + std::to_string(cfg.dim));
  if (cfg.backend == backend_kind::leveldb) {
    if (cfg.path.empty())
      return bad("the leveldb backend needs a path");
    if (cfg.eviction.kind == eviction_kind::lru)
      return bad("the leveldb backend evicts from disk by ttl or lfu, not lru");
  }
  if (cfg.backend == backend_kind::redis) {
    if (auto where = parse_redis_location(cfg.path); !where)
      return bad(render(where.error()));
    if (cfg.eviction.kind != eviction_kind::none)
      return bad("eviction is a memory-backend feature");
  }
  if (cfg.backend > backend_kind::redis)
    return bad("unknown backend " + std::to_string(static_cast<int>(cfg.backend)));
  if (cfg.sampler.kind > sampler_kind::unigram)
    return bad("unknown sampler " + std::to_string(static_cast<int>(cfg.sampler.kind)) +
               " (uniform, log_uniform or unigram)");
  if (!(cfg.sampler.power > 0 && cfg.sampler.power <= 4))
    return bad("the sampler's power must be in (0, 4]");
  if (cfg.ann.enabled) {
    if (cfg.backend == backend_kind::redis)
      return bad("an ANN index needs the memory or leveldb backend (Redis rows change unseen)");
    if (cfg.ann.probes == 0 || cfg.ann.rerank == 0)
      return bad("the ANN index's probes and rerank must be at least 1");
    if (cfg.ann.lists > 65536)
      return bad("the ANN index takes at most 65,536 lists");
    if (cfg.ann.refresh_ms == 0 || cfg.ann.refresh_ms > 3'600'000)
      return bad("the ANN index's refresh_ms must be in 1..3,600,000");
  }
  // A rule this process does not know is checked where a store binds it, on the shards' nodes
  // (a master or client may not have loaded its plugin).
  auto rule = compute::bind_rule(cfg.optimizer, std::max<size_t>(cfg.dim, 1),
                                 compute::rule_registry::global());
  auto rule_error = rule || is(rule.error(), errc::unknown_rule) ? plain_error{} : rule.error();
  for (auto check : {make_error(compute::validate(cfg.init)), make_error(rule_error),
                     validate(cfg.admission), validate(cfg.eviction)})
    if (check)
      return bad(render(check));
  return {};
}

caf::error check_batch(const de_config& cfg, size_t batch) {
  if (batch == 0)
    return make_error(errc::empty_batch, cfg.name);
  if (batch > cfg.max_batch)
    return make_error(errc::batch_too_large, cfg.name + ": " + std::to_string(batch) +
                                               " keys, limit " + std::to_string(cfg.max_batch));
  return {};
}

caf::error check_gradients(std::string_view table, bool read_only, size_t dim, size_t keys,
                           std::span<const float> grads) {
  auto name = table.empty() ? std::string{"the table"} : "embedding '" + std::string{table} + "'";
  if (read_only)
    return make_error(errc::read_only, "update of " + name);
  if (grads.size() != keys * dim)
    return make_error(errc::dimension_mismatch,
                      name + ": " + std::to_string(keys) + " keys of dim " + std::to_string(dim) +
                        " need " + std::to_string(keys * dim) + " gradient values, got " +
                        std::to_string(grads.size()));
  if (auto bad = compute::first_non_finite(grads); bad < grads.size())
    return make_error(errc::non_finite, "the gradient of key " + std::to_string(bad / dim) +
                                          " of the batch for " + name);
  return {};
}

caf::error check_gradients(const de_config& cfg, size_t keys, std::span<const float> grads) {
  return check_gradients(cfg.name, cfg.read_only, cfg.dim, keys, grads);
}

namespace {

caf::expected<std::unique_ptr<embedding_store>> make_backend(const de_config& cfg) {
  if (cfg.backend == backend_kind::leveldb) {
    auto store = leveldb_store::open(cfg);
    if (!store)
      return std::move(store.error());
    return std::unique_ptr<embedding_store>{std::move(*store)};
  }
  if (cfg.backend == backend_kind::redis) {
    auto store = redis_store::open(cfg);
    if (!store)
      return std::move(store.error());
    return std::unique_ptr<embedding_store>{std::move(*store)};
  }
  auto store = memory_store::make(memory_options(cfg));
  if (!store)
    return std::move(store.error());
  return std::unique_ptr<embedding_store>{std::move(*store)};
}

} // namespace

caf::expected<std::unique_ptr<embedding_store>> make_store(const de_config& cfg) {
  if (auto err = validate(cfg))
    return err;
  auto store = make_backend(cfg);
  if (!store || !cfg.ann.enabled)
    return store;
  auto indexed = indexed_store::open(std::move(*store), cfg.ann);
  if (!indexed)
    return std::move(indexed.error());
  return std::unique_ptr<embedding_store>{std::move(*indexed)};
}

de_config shard_config(const de_config& cfg, uint32_t index) {
  auto result = cfg;
  if (cfg.backend == backend_kind::leveldb)
    result.path = (std::filesystem::path{cfg.path} / ("shard-" + std::to_string(index))).string();
  if (cfg.backend == backend_kind::redis)
    result.path = cfg.path + "/shard-" + std::to_string(index);
  return result;
}

caf::error remove_store_files(const de_config& cfg, uint32_t shard_count) {
  if (cfg.backend == backend_kind::redis)
    return redis_store::remove(cfg, shard_count);
  if (cfg.backend != backend_kind::leveldb)
    return {};
  std::error_code ec;
  std::filesystem::remove_all(cfg.path, ec);
  if (ec)
    return make_error(errc::io_error, "cannot remove " + cfg.path + ": " + ec.message());
  return {};
}

} // namespace darcy::stores
