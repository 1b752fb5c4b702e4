#include "python/src/store_choice.hpp"

#include <filesystem>
#include <string_view>

#include "messages/error.hpp"

namespace darcy::python {

namespace {

constexpr std::string_view leveldb_prefix = "leveldb:";
constexpr std::string_view redis_prefix = "redis://";

} // namespace

caf::error check_store(const std::string& store) {
  if (store == "memory" || store.starts_with(redis_prefix))
    return {};
  if (store.starts_with(leveldb_prefix) && store.size() > leveldb_prefix.size())
    return {};
  return make_error(
    errc::invalid_argument,
    "store '" + store + "'; a store is \"memory\", \"leveldb:DIR\" or \"redis://HOST:PORT\"");
}

void apply_store(const std::string& store, de_config& cfg) {
  if (store.starts_with(leveldb_prefix)) {
    cfg.backend = backend_kind::leveldb;
    cfg.path = (std::filesystem::path{store.substr(leveldb_prefix.size())} / cfg.name).string();
  } else if (store.starts_with(redis_prefix)) {
    cfg.backend = backend_kind::redis;
    cfg.path = store;
  } else {
    cfg.backend = backend_kind::memory;
    cfg.path.clear();
  }
}

} // namespace darcy::python
