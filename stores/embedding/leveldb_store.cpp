#include "stores/embedding/leveldb_store.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>

#include "compute/hash.hpp"
#include "compute/initializer.hpp"
#include "compute/optimizer.hpp"
#include "messages/error.hpp"
#include "stores/embedding/admission.hpp"
#include "stores/embedding/de_config.hpp"
#include "stores/embedding/leveldb_env.hpp"
#include "stores/embedding/leveldb_layout.hpp"
#include "stores/embedding/row_codec.hpp"
#include "stores/embedding/value_log.hpp"

namespace darcy::stores {

namespace {

const std::string format_key = "m:format";
/// Marks a database whose rows are in a value log and their pointers in LevelDB.
constexpr const char* pointers_format_suffix = ";values=log";
/// Marks a database whose rows are in a value log, their only record.
constexpr const char* log_format_suffix = ";values=log-only";

} // namespace

using leveldb_layout::db_error;
using leveldb_layout::locator_of;
using leveldb_layout::pointer_of;
using leveldb_layout::row_key;
using leveldb_layout::row_prefix;

caf::expected<std::unique_ptr<leveldb_store>> leveldb_store::open(const de_config& cfg) {
  return open(cfg, pointer_index::tag_bits);
}

caf::expected<std::unique_ptr<leveldb_store>> leveldb_store::open(const de_config& cfg,
                                                                  int index_tag_bits) {
  if (cfg.path.empty())
    return make_error(errc::invalid_config, "embedding '" + cfg.name + "': leveldb needs a path");
  if (auto err = validate(cfg))
    return err;
  auto cache = make_cache(cfg);
  if (!cache)
    return std::move(cache.error());
  std::error_code ec;
  std::filesystem::create_directories(cfg.path, ec);
  leveldb::Options options;
  options.create_if_missing = true;
  // Shared by every database of the process and never freed, so that they outlive each one.
  // Most reads of a growing table are of keys it does not hold yet: the filter answers those
  // without reading a block. A node holds one database per table and shard: one block cache
  // for all of them, and files of 32 MiB (not 2) keep their open files few.
  static const leveldb::FilterPolicy* const bloom = leveldb::NewBloomFilterPolicy(10);
  static leveldb::Cache* const blocks = leveldb::NewLRUCache(64 << 20);
  options.env = leveldb_env();
  options.filter_policy = bloom;
  options.block_cache = blocks;
  options.max_file_size = 32 << 20;
  // Rows are floats, which Snappy barely shrinks: compressing them cost the compaction thread
  // a third of its time.
  options.compression = leveldb::kNoCompression;
  options.max_open_files = 256;
  leveldb::DB* raw = nullptr;
  auto status = leveldb::DB::Open(options, cfg.path, &raw);
  if (!status.ok())
    return db_error("cannot open " + cfg.path, status);
  std::unique_ptr<leveldb_store> store{new leveldb_store(cfg, std::move(*cache), raw)};
  if (auto err = store->start_admission())
    return err;
  // A database written before the value log holds its rows inline, and one written before the
  // index was built from the log holds their pointers: each is served as written.
  auto inline_format = row_format(cfg, store->slot_floats());
  auto pointers_format = inline_format + pointers_format_suffix;
  auto log_format = inline_format + log_format_suffix;
  std::string format;
  status = raw->Get(leveldb::ReadOptions{}, format_key, &format);
  if (status.IsNotFound()) {
    leveldb::WriteOptions synced;
    synced.sync = true;
    status = raw->Put(synced, format_key, log_format);
    if (!status.ok())
      return db_error("cannot write " + cfg.path, status);
    format = log_format;
  } else if (!status.ok()) {
    return db_error("cannot read " + cfg.path, status);
  } else if (format != log_format && format != pointers_format && format != inline_format) {
    return make_error(errc::corrupt_file, cfg.path + " holds rows with " + format +
                                            ", the embedding needs " + inline_format);
  }
  if (format != inline_format) {
    auto log = value_log::open(cfg.path);
    if (!log)
      return std::move(log.error());
    store->log_ = std::make_unique<value_log>(std::move(*log));
    store->index_ = std::make_unique<pointer_index>(
      static_cast<uint32_t>(row_record_bytes(cfg.dim, store->slot_floats())),
      store->log_->oldest_generation(), index_tag_bits);
    store->pointers_in_db_ = format == pointers_format;
  }
  if (auto err = format == log_format ? store->index_from_log() : store->index_from_db())
    return err;
  store->account_index();
  return store;
}

caf::error leveldb_store::index_from_db() {
  // Count rows by iterating: always right, even after a crash between write-back and flush.
  uint64_t live = 0;
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(leveldb::ReadOptions{})};
  for (it->Seek(std::string(1, row_prefix)); it->Valid() && it->key()[0] == row_prefix;
       it->Next()) {
    ++rows_;
    std::string_view key{it->key().data() + 1, it->key().size() - 1};
    auto hash = compute::hash_key(key);
    if (!log_) {
      on_disk_.add(hash);
      continue;
    }
    value_pointer p;
    if (!decode_pointer({it->value().data(), it->value().size()}, p))
      return make_error(errc::corrupt_file,
                        cfg_.path + ": bad pointer for key '" + std::string{key} + "'");
    live += p.length;
    index_->insert(hash, key.size(), p);
  }
  if (!it->status().ok())
    return db_error("cannot read " + cfg_.path, it->status());
  if (log_)
    log_->set_garbage(log_->bytes() - std::min(live, log_->bytes()));
  return {};
}

void leveldb_store::account_index() {
  // A write-back in flight holds the records of a 32nd of the cache's rows.
  reserve(cfg_.cache_bytes / 32 + (index_ ? index_->bytes() : 0));
}

leveldb_store::leveldb_store(de_config cfg, std::unique_ptr<memory_store> cache, leveldb::DB* db)
  : write_behind_store(cfg, std::move(cache)), db_(db) {
}

leveldb_store::~leveldb_store() {
  flush();
}

void leveldb_store::put(leveldb::WriteBatch& batch, const row_ref& row, bool indexed) {
  auto& bytes = encode(row);
  if (!log_) {
    batch.Put(row_key(row.key), bytes);
    return;
  }
  if (indexed)
    log_->discard(value_log::record_length(row.key.size(), bytes.size()));
  auto at = log_->append(row.key, bytes);
  if (pointers_in_db_)
    batch.Put(row_key(row.key), encode_pointer(at));
  moved_.push_back({std::string{row.key}, at, std::nullopt, indexed});
}

caf::error leveldb_store::write(leveldb::WriteBatch& batch, bool sync, const std::string& what) {
  auto moved = std::move(moved_);
  moved_.clear();
  if (log_)
    if (auto err = log_->write_out(sync))
      return err;
  if (!log_ || pointers_in_db_) {
    leveldb::WriteOptions options;
    options.sync = sync;
    auto status = db_->Write(options, &batch);
    if (!status.ok())
      return db_error(what + cfg_.path, status);
  }
  for (auto& m : moved) {
    sampling_locate(m.key, locator_of(m.at));
    if (auto err = index_place(m.key, compute::hash_key(m.key), m.at, m.was, m.on_disk))
      return err;
  }
  if (!moved.empty())
    account_index();
  return {};
}

caf::error leveldb_store::index_place(std::string_view key, uint64_t hash, const value_pointer& at,
                                      std::optional<value_pointer> was, bool on_disk) {
  if (was && index_->replace(hash, key.size(), *was, at))
    return {};
  index_->find(hash, key.size(), candidates_);
  // A row the database holds has its place in the index: when that is the only one found, it
  // is the row's. A new row's hash agrees with none, but for about one in 10^8.
  std::optional<value_pointer> own;
  if (on_disk && candidates_.size() == 1) {
    own = candidates_[0];
  } else if (!candidates_.empty()) {
    std::string bytes;
    if (auto err = read_indexed(key, hash, bytes, own))
      return err;
  }
  if (!own || !index_->replace(hash, key.size(), *own, at))
    index_->insert(hash, key.size(), at);
  return {};
}

caf::error leveldb_store::read_indexed(std::string_view key, uint64_t hash, std::string& bytes,
                                       std::optional<value_pointer>& at) {
  at.reset();
  index_->find(hash, key.size(), candidates_);
  for (auto& place : candidates_) {
    auto err = log_->read(place, key, bytes);
    if (!err) {
      at = place;
      return {};
    }
    if (!is(err, errc::corrupt_file))
      return err;
    // Another key's record, if its key's hash agrees with `hash` where the index looks.
    auto held = log_->key_at(place);
    if (!held || !index_->agree(compute::hash_key(*held), hash))
      return err;
  }
  return {};
}

caf::error leveldb_store::load(std::span<const std::string_view> keys, bool create,
                               std::span<uint32_t> rows) {
  auto& hashes = load_hashes_;
  hashes.resize(keys.size());
  for (size_t k = 0; k < keys.size(); ++k)
    hashes[k] = compute::hash_key(keys[k]);
  cache_->locate(keys, hashes, rows);
  auto& missing = load_missing_;
  missing.clear();
  // Each touch writes the row's entry (and its neighbours' when it moves in the recency list):
  // entries a few keys ahead are fetched meanwhile.
  constexpr size_t ahead = 8;
  for (uint32_t k = 0; k < keys.size(); ++k) {
    if (k + ahead < keys.size())
      prefetch_entry(rows[k + ahead]);
    if (rows[k] != none)
      touch_row(rows[k], keys[k], false, {});
    else
      missing.push_back(k);
  }
  tier_hits_ += keys.size() - missing.size();
  tier_misses_ += missing.size();
  // Sorted reads walk LevelDB's tables in order; a repeated key is read once.
  std::sort(missing.begin(), missing.end(),
            [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  // A row the sampling index has located is read from the log without asking LevelDB.
  auto& located = load_located_;
  located.assign(missing.size(), row_locator{});
  if (log_ && sampling()) {
    auto& wanted = load_wanted_;
    wanted.resize(missing.size());
    for (size_t i = 0; i < missing.size(); ++i)
      wanted[i] = keys[missing[i]];
    sampling_locations(wanted, located);
  }
  auto& bytes = load_bytes_;
  auto& values = load_values_;
  auto& slots = load_slots_;
  uint32_t row = none;
  for (size_t i = 0; i < missing.size(); ++i) {
    if (index_ && i + ahead < missing.size())
      index_->prefetch(hashes[missing[i + ahead]]);
    auto key = keys[missing[i]];
    if (i > 0 && key == keys[missing[i - 1]]) {
      rows[missing[i]] = row;
      continue;
    }
    row = none;
    auto hash = hashes[missing[i]];
    bool read = false;
    auto pending = pending_ ? pending_->find(key, hash) : std::nullopt;
    if (pending) {
      // Its newest record: the sampling index and the pointer index may name an older one.
      bytes.assign(pending_->record(*pending));
      ++pending_reads_;
      read = true;
    } else if (located[i].length > 0) {
      if (auto err = log_->read(pointer_of(located[i]), key, bytes))
        return err;
      ++located_reads_;
      read = true;
    } else if (log_) {
      std::optional<value_pointer> at;
      if (auto err = read_indexed(key, hash, bytes, at))
        return err;
      read = at.has_value();
      index_reads_ += read;
    } else if (on_disk_.may_contain(hash)) {
      ++db_reads_;
      auto status = db_->Get(leveldb::ReadOptions{}, row_key(key), &bytes);
      if (!status.ok() && !status.IsNotFound())
        return db_error("cannot read " + cfg_.path, status);
      read = status.ok();
    }
    if (read) {
      if (!pending)
        ++backend_reads_;
      row_record record;
      if (!decode_row_record(key, bytes, cfg_.dim, cache_->slot_floats(), values, slots, record))
        return make_error(errc::corrupt_file,
                          cfg_.path + ": bad record for key '" + std::string{key} + "'");
      auto put = cache_->put_row(record);
      if (!put)
        return std::move(put.error());
      row = put->index;
      touch_row(row, key, false, {});
    } else if (create && (row = create_row(key)) != none) {
      ++rows_;
      touch_row(row, key, true, {});
      entry_at(row).indexed = false;
    }
    rows[missing[i]] = row;
  }
  return {};
}

caf::error leveldb_store::evict() {
  auto& ev = cfg_.eviction;
  bool ttl_due = ev.kind == eviction_kind::ttl &&
                 last_step_ - ttl_pass_step_ >= std::max<int64_t>(1, ev.ttl_steps / 4);
  bool lfu_due = ev.kind == eviction_kind::lfu && rows_ > ev.max_rows;
  if (!ttl_due && !lfu_due)
    return {};
  // The database then holds every row with its newest frequency and step.
  if (auto err = flush())
    return err;
  std::vector<std::string> victims;
  if (ttl_due) {
    ttl_pass_step_ = last_step_;
    if (auto err = for_each_record([&](std::string_view key, const row_record& r, auto) {
          if (last_step_ - r.last_update > ev.ttl_steps)
            victims.emplace_back(key);
          return caf::error{};
        }))
      return err;
    return remove(victims);
  }
  // LFU, 5% below the limit so that a stream of new keys does not scan on every batch: the
  // first pass counts rows by frequency, which gives the cutoff; the second removes every
  // row below it and as many at it as the target needs.
  auto target = ev.max_rows - ev.max_rows / 20;
  auto excess = rows_ - target;
  std::map<uint64_t, uint64_t> by_frequency;
  if (auto err = for_each_record([&](std::string_view, const row_record& r, auto) {
        ++by_frequency[r.frequency];
        return caf::error{};
      }))
    return err;
  uint64_t cutoff = 0, below = 0;
  for (auto& [frequency, count] : by_frequency) {
    cutoff = frequency;
    if (below + count >= excess)
      break;
    below += count;
  }
  auto at_cutoff = excess - below;
  if (auto err = for_each_record([&](std::string_view key, const row_record& r, auto) {
        if (r.frequency < cutoff || (r.frequency == cutoff && at_cutoff > 0)) {
          if (r.frequency == cutoff)
            --at_cutoff;
          victims.emplace_back(key);
          if (victims.size() >= 4096) {
            if (auto err = remove(victims))
              return err;
            victims.clear();
          }
        }
        return caf::error{};
      }))
    return err;
  return remove(victims);
}

caf::error leveldb_store::remove_rows(std::span<const std::string_view> keys) {
  if (auto err = finish_pending())
    return err;
  std::set<std::string_view> unique(keys.begin(), keys.end());
  std::vector<std::string> held;
  std::string stored;
  for (auto key : unique) {
    if (row_of(key) != none) {
      held.emplace_back(key);
      continue;
    }
    auto hash = compute::hash_key(key);
    if (log_) {
      std::optional<value_pointer> at;
      if (auto err = read_indexed(key, hash, stored, at))
        return err;
      if (at)
        held.emplace_back(key);
      continue;
    }
    auto status = on_disk_.may_contain(hash)
                    ? db_->Get(leveldb::ReadOptions{}, row_key(key), &stored)
                    : leveldb::Status::NotFound({});
    if (status.ok())
      held.emplace_back(key);
    else if (!status.IsNotFound())
      return db_error("cannot read " + cfg_.path, status);
  }
  return remove(held);
}

caf::error leveldb_store::remove(const std::vector<std::string>& keys) {
  if (keys.empty())
    return {};
  if (auto err = finish_pending())
    return err;
  leveldb::WriteBatch batch;
  // The places the index holds for the rows the database holds (none for rows only cached).
  std::vector<std::optional<value_pointer>> places(keys.size());
  std::string bytes;
  for (size_t i = 0; i < keys.size(); ++i) {
    batch.Delete(row_key(keys[i]));
    if (!log_)
      continue;
    if (auto err = read_indexed(keys[i], compute::hash_key(keys[i]), bytes, places[i]))
      return err;
    if (places[i])
      log_->discard(places[i]->length);
    // Where the log is the rows' only record, a scan must meet the removal after every record
    // of the row, those of a write-back that failed too; the removal itself is garbage at once.
    if (!pointers_in_db_)
      log_->discard(log_->append_removal(keys[i]).length);
  }
  if (auto err = write(batch, true, "cannot evict from "))
    return err;
  for (size_t i = 0; i < keys.size(); ++i) {
    forget(keys[i]);
    sampling_remove(keys[i]);
    if (places[i])
      index_->erase(compute::hash_key(keys[i]), *places[i]);
    erased(keys[i]);
  }
  rows_ -= std::min<uint64_t>(rows_, keys.size());
  evicted_ += keys.size();
  return {};
}

store_stats leveldb_store::stats() const {
  auto s = write_behind_store::stats();
  s.evictions = evicted_;
  s.bytes += on_disk_.bytes() + (index_ ? index_->bytes() : 0);
  // Table files only (the log and manifest are small and short-lived): LevelDB's own estimate of
  // the row range.
  std::string first(1, row_prefix), last(1, row_prefix + 1);
  leveldb::Range range{first, last};
  uint64_t size = 0;
  db_->GetApproximateSizes(&range, 1, &size);
  s.disk_bytes = size + (log_ ? log_->written_bytes() : 0);
  return s;
}

caf::error leveldb_store::flush() {
  if (auto err = finish_pending())
    return err;
  leveldb::WriteBatch batch;
  auto dirty = dirty_keys();
  for (auto& key : dirty)
    put(batch, *cache_->find(key), entry_of(key)->indexed);
  if (auto err = write(batch, true, "cannot flush "))
    return err;
  for (auto& key : dirty) {
    auto& e = *entry_of(key);
    if (!e.indexed && !log_)
      on_disk_.add(compute::hash_key(key));
    e.dirty = false;
    e.indexed = true;
  }
  return {};
}

caf::error leveldb_store::export_rows(const std::function<void(const row_record&)>& f) {
  if (auto err = flush())
    return err;
  return for_each_record([&](std::string_view, const row_record& r, auto) {
    f(r);
    return caf::error{};
  });
}

caf::error leveldb_store::fill_sampling_index(sample_index& index) {
  if (auto err = flush())
    return err;
  auto none = [](std::string_view, uint64_t stored) { return stored; };
  return for_each_record([&](std::string_view key, const row_record& r, const value_pointer* at) {
    index.set(key, r.frequency, none);
    if (at)
      index.locate(key, locator_of(*at));
    return caf::error{};
  });
}

caf::error leveldb_store::import_row(const row_record& row) {
  std::string_view keys[] = {row.key};
  uint32_t found[] = {none};
  if (auto err = load(keys, false, found))
    return err;
  bool fresh = found[0] == none;
  if (fresh)
    ++rows_;
  sampling_set(row.key, row.frequency);
  auto put = cache_->put_row(row);
  if (!put)
    return std::move(put.error());
  touch_row(put->index, row.key, true, {});
  if (fresh)
    entry_at(put->index).indexed = false;
  return settle_within_budget();
}

} // namespace darcy::stores
