#include "stores/embedding/leveldb_store.hpp"

#include <algorithm>
#include <filesystem>

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "compute/hash.hpp"
#include "compute/initializer.hpp"
#include "compute/optimizer.hpp"
#include "messages/error.hpp"
#include "stores/embedding/admission.hpp"
#include "stores/embedding/cached_rows.hpp"
#include "stores/embedding/row_codec.hpp"

namespace darcy::stores {

namespace {

constexpr char row_prefix = 'r';
const std::string format_key = "m:format";

std::string row_key(std::string_view key) {
  std::string result;
  result.reserve(key.size() + 1);
  result.push_back(row_prefix);
  result.append(key);
  return result;
}

caf::error db_error(const std::string& what, const leveldb::Status& status) {
  return make_error(errc::io_error, what + ": " + status.ToString());
}

} // namespace

caf::expected<std::unique_ptr<leveldb_store>> leveldb_store::open(const de_config& cfg) {
  if (cfg.path.empty())
    return make_error(errc::invalid_config, "embedding '" + cfg.name + "': leveldb needs a path");
  if (cfg.eviction.kind != eviction_kind::none)
    return make_error(errc::invalid_config,
                      "embedding '" + cfg.name + "': eviction is a memory-backend feature");
  auto cache = memory_store::make(cache_options(cfg));
  if (!cache)
    return std::move(cache.error());
  auto admission = make_admission(cfg.admission);
  if (!admission)
    return std::move(admission.error());
  std::error_code ec;
  std::filesystem::create_directories(cfg.path, ec);
  leveldb::Options options;
  options.create_if_missing = true;
  leveldb::DB* raw = nullptr;
  auto status = leveldb::DB::Open(options, cfg.path, &raw);
  if (!status.ok())
    return db_error("cannot open " + cfg.path, status);
  std::unique_ptr<leveldb_store> store{new leveldb_store(cfg, std::move(*cache), raw)};
  store->admission_ = std::move(*admission);
  auto expected_format = row_format(cfg, store->slot_count());
  std::string format;
  status = raw->Get(leveldb::ReadOptions{}, format_key, &format);
  if (status.IsNotFound()) {
    status = raw->Put(leveldb::WriteOptions{}, format_key, expected_format);
    if (!status.ok())
      return db_error("cannot write " + cfg.path, status);
  } else if (!status.ok()) {
    return db_error("cannot read " + cfg.path, status);
  } else if (format != expected_format) {
    return make_error(errc::corrupt_file, cfg.path + " holds rows with " + format +
                                            ", the embedding needs " + expected_format);
  }
  // Count rows by iterating: always right, even after a crash between write-back and flush.
  std::unique_ptr<leveldb::Iterator> it{raw->NewIterator(leveldb::ReadOptions{})};
  for (it->Seek(std::string(1, row_prefix)); it->Valid() && it->key()[0] == row_prefix; it->Next())
    ++store->rows_;
  return store;
}

leveldb_store::leveldb_store(de_config cfg, std::unique_ptr<memory_store> cache, leveldb::DB* db)
  : cfg_(std::move(cfg)), cache_(std::move(cache)), db_(db) {
  auto row_bytes = (cfg_.dim * (1 + cache_->slot_count())) * sizeof(float) + 96;
  capacity_ = std::max<size_t>(16, cfg_.cache_bytes / row_bytes);
}

leveldb_store::~leveldb_store() {
  flush();
}

std::string leveldb_store::encode(const row_record& row) const {
  std::string bytes;
  append_row_record(row, bytes);
  return bytes;
}

void leveldb_store::touch(std::string_view key, bool dirty) {
  auto [it, fresh] = entries_.try_emplace(std::string{key});
  if (fresh) {
    lru_.push_front(it->first);
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.position);
  }
  it->second.position = lru_.begin();
  it->second.dirty = it->second.dirty || dirty;
}

caf::error leveldb_store::load(std::span<const std::string_view> keys, bool create) {
  std::vector<std::string_view> missing;
  for (auto key : keys) {
    if (entries_.count(std::string{key}) > 0)
      touch(key, false);
    else
      missing.push_back(key);
  }
  // Sorted reads walk LevelDB's tables in order.
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  std::string bytes;
  std::vector<float> values, slots;
  for (auto key : missing) {
    auto status = db_->Get(leveldb::ReadOptions{}, row_key(key), &bytes);
    if (status.ok()) {
      row_record row;
      if (!decode_row_record(key, bytes, cfg_.dim, cache_->slot_count(), values, slots, row))
        return make_error(errc::corrupt_file,
                          cfg_.path + ": bad record for key '" + std::string{key} + "'");
      if (auto err = cache_->import_row(row))
        return err;
      touch(key, false);
    } else if (!status.IsNotFound()) {
      return db_error("cannot read " + cfg_.path, status);
    } else if (create && (!admission_ || admission_->admit(key, compute::hash_key(key)))) {
      if (admission_)
        admission_->admitted(key);
      cache_->find_or_insert(key);
      ++rows_;
      touch(key, true);
    }
  }
  return {};
}

caf::error leveldb_store::shrink() {
  leveldb::WriteBatch batch;
  bool writes = false;
  while (cache_->size() > capacity_ && !lru_.empty()) {
    auto key = lru_.back();
    auto entry = entries_.find(key);
    if (entry->second.dirty) {
      auto row = cache_->find(key);
      batch.Put(row_key(key), encode({row->key, row->values, row->slots, row->meta->frequency,
                                      row->meta->updates, row->meta->last_update}));
      writes = true;
    }
    cache_->erase(key);
    entries_.erase(entry);
    lru_.pop_back();
  }
  if (!writes)
    return {};
  auto status = db_->Write(leveldb::WriteOptions{}, &batch);
  return status.ok() ? caf::error{} : db_error("cannot write back to " + cfg_.path, status);
}

caf::error leveldb_store::flush() {
  leveldb::WriteBatch batch;
  for (auto& [key, entry] : entries_) {
    if (!entry.dirty)
      continue;
    auto row = cache_->find(key);
    batch.Put(row_key(key), encode({row->key, row->values, row->slots, row->meta->frequency,
                                    row->meta->updates, row->meta->last_update}));
  }
  leveldb::WriteOptions sync;
  sync.sync = true;
  auto status = db_->Write(sync, &batch);
  if (!status.ok())
    return db_error("cannot flush " + cfg_.path, status);
  for (auto& [key, entry] : entries_)
    entry.dirty = false;
  return {};
}

caf::error leveldb_store::lookup(std::span<const std::string_view> keys, std::span<float> out) {
  if (auto err = check_lookup(cfg_, keys.size(), out))
    return err;
  if (auto err = load(keys, !cfg_.read_only))
    return err;
  fill_from_cache(*cache_, cfg_, keys, out, [&](size_t k, const row_ref& row) {
    if (!cfg_.read_only) {
      ++row.meta->frequency;
      touch(keys[k], true);
    }
  });
  return shrink();
}

caf::error leveldb_store::update(std::span<const std::string_view> keys,
                                 std::span<const float> grads, int64_t step) {
  if (auto err = check_update(cfg_, keys.size(), grads))
    return err;
  if (auto err = load(keys, !admission_))
    return err;
  std::vector<std::string_view> present;
  std::vector<float> present_grads;
  dropped_updates_ += gather_present(
    keys, grads, cfg_.dim, [&](size_t k) { return entries_.count(std::string{keys[k]}) > 0; },
    present, present_grads);
  for (auto key : present)
    touch(key, true);
  if (!present.empty())
    if (auto err = cache_->update(present, present_grads, step))
      return err;
  return shrink();
}

store_stats leveldb_store::stats() const {
  auto s = cache_->stats();
  s.rows = rows_;
  s.dropped_updates = dropped_updates_;
  return s;
}

caf::error leveldb_store::export_rows(const std::function<void(const row_record&)>& f) {
  if (auto err = flush())
    return err;
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(leveldb::ReadOptions{})};
  std::vector<float> values, slots;
  for (it->Seek(std::string(1, row_prefix)); it->Valid() && it->key()[0] == row_prefix;
       it->Next()) {
    std::string_view key{it->key().data() + 1, it->key().size() - 1};
    row_record row;
    if (!decode_row_record(key, {it->value().data(), it->value().size()}, cfg_.dim,
                           cache_->slot_count(), values, slots, row))
      return make_error(errc::corrupt_file,
                        cfg_.path + ": bad record for key '" + std::string{key} + "'");
    f(row);
  }
  return it->status().ok() ? caf::error{} : db_error("cannot read " + cfg_.path, it->status());
}

caf::error leveldb_store::scan(
  const std::function<void(std::string_view, std::span<const float>)>& f) {
  return export_rows([&](const row_record& r) { f(r.key, r.values); });
}

caf::error leveldb_store::import_row(const row_record& row) {
  std::string_view keys[] = {row.key};
  if (auto err = load(keys, false))
    return err;
  if (entries_.count(std::string{row.key}) == 0)
    ++rows_;
  if (auto err = cache_->import_row(row))
    return err;
  touch(row.key, true);
  return shrink();
}

} // namespace darcy::stores
