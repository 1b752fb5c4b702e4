#include "stores/embedding/leveldb_store.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <span>

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "compute/hash.hpp"
#include "messages/error.hpp"
#include "stores/embedding/background_writer.hpp"
#include "stores/embedding/leveldb_layout.hpp"
#include "stores/embedding/row_codec.hpp"

// The LevelDB tier's write-backs: what settle hands the background writer, what the writer
// does with it, and what the store learns when it is done.
namespace darcy::stores {

using leveldb_layout::assign_row_key;
using leveldb_layout::db_error;
using leveldb_layout::locator_of;

caf::error leveldb_store::settle() {
  auto limit = capacity_ - std::min(headroom_, capacity_ / 2);
  if (cache_->size() > limit) {
    if (auto err = finish_pending())
      return err;
    // Past the limit a 32nd of it goes at once, so that write-backs reach LevelDB in batches.
    auto evicted = oldest_rows(limit - limit / 32);
    std::vector<uint32_t> dirty;
    for (auto row : evicted)
      if (entry_at(row).dirty)
        dirty.push_back(row);
    auto rows = spare_ ? std::exchange(spare_, nullptr) : std::make_shared<pending_rows>(0);
    rows->reset(dirty.size());
    // The oldest rows are out of the CPU's caches: their blocks are fetched a round ahead.
    constexpr size_t lanes = 16;
    for (size_t first = 0; first < dirty.size(); first += lanes) {
      auto round = std::span{dirty}.subspan(first, std::min(lanes, dirty.size() - first));
      for (auto row : round)
        cache_->prefetch_block(row);
      for (auto row : round) {
        auto& e = entry_at(row);
        auto r = cache_->row(row);
        auto& record = encode(r);
        if (log_ && e.indexed)
          log_->discard(value_log::record_length(r.key.size(), record.size()));
        auto hash = compute::hash_key(r.key);
        rows->add(r.key, hash, record, e.indexed);
        if (!e.indexed && !log_)
          on_disk_.add(hash);
      }
    }
    forget_rows(evicted);
    if (!rows->empty())
      write_behind(std::move(rows));
  }
  if (auto err = evict())
    return err;
  return collect_garbage();
}

const std::string& leveldb_store::encode(const row_ref& row) {
  record_.clear();
  append_row_record(
    {row.key, row.values, row.slots, row.meta->frequency, row.meta->updates, row.meta->last_update},
    record_);
  return record_;
}

void leveldb_store::write_behind(std::shared_ptr<pending_rows> rows) {
  pending_ = rows;
  std::function<caf::error()> job = [this, rows] { return write_pending(*rows); };
  if (failing_write_backs_ > 0) {
    --failing_write_backs_;
    job = [this] {
      return make_error(errc::io_error, "cannot write back to " + cfg_.path + ": injected");
    };
  }
  if (rows->size() >= min_background_rows_) {
    ++background_write_backs_;
    pending_done_ = write_in_background(std::move(job));
    return;
  }
  pending_done_ = background_job::done(job());
}

caf::error leveldb_store::write_pending(pending_rows& rows) {
  rows.places.resize(rows.size());
  if (log_ && !pointers_in_db_) {
    for (size_t i = 0; i < rows.size(); ++i)
      rows.places[i] = log_->append(rows.key(i), rows.record(i));
    return log_->write_out(false);
  }
  leveldb::WriteBatch batch;
  std::string key;
  // In key order, each insert into LevelDB's memtable walks a path the last one warmed. The
  // keys are sorted here, on the writer's thread, where they lie together in the batch.
  order_.resize(rows.size());
  std::iota(order_.begin(), order_.end(), size_t{0});
  std::sort(order_.begin(), order_.end(),
            [&](size_t a, size_t b) { return rows.key(a) < rows.key(b); });
  for (auto i : order_) {
    assign_row_key(key, rows.key(i));
    if (!log_) {
      batch.Put(key, {rows.record(i).data(), rows.record(i).size()});
      continue;
    }
    rows.places[i] = log_->append(rows.key(i), rows.record(i));
    batch.Put(key, encode_pointer(rows.places[i]));
  }
  if (log_)
    if (auto err = log_->write_out(false))
      return err;
  auto status = db_->Write(leveldb::WriteOptions{}, &batch);
  return status.ok() ? caf::error{} : db_error("cannot write back to " + cfg_.path, status);
}

caf::error leveldb_store::finish_pending() {
  if (!pending_)
    return {};
  auto rows = std::move(pending_);
  pending_.reset();
  auto err = pending_done_.take_or_wait();
  if (!err) {
    if (log_) {
      constexpr size_t ahead = 8;
      for (size_t i = 0; i < rows->size(); ++i) {
        if (i + ahead < rows->size())
          index_->prefetch(rows->hash(i + ahead));
        sampling_locate(rows->key(i), locator_of(rows->places[i]));
        if (auto index_err = index_place(rows->key(i), rows->hash(i), rows->places[i], std::nullopt,
                                         rows->indexed(i)))
          return index_err;
      }
      account_index();
    }
    if (rows.use_count() == 1) // the writer's job, which held it too, is gone
      spare_ = std::move(rows);
    return {};
  }
  // Not written: each row goes back to the cache (or stays there, when a load brought it
  // back), dirty; a row new to the database when the batch was made is new to it still.
  std::vector<float> values, slots;
  for (size_t i = 0; i < rows->size(); ++i) {
    auto key = rows->key(i);
    auto row = row_of(key);
    if (row == none) {
      row_record record;
      if (!decode_row_record(key, rows->record(i), cfg_.dim, cache_->slot_floats(), values, slots,
                             record))
        continue;
      auto put = cache_->put_row(record);
      if (!put)
        continue;
      row = put->index;
    }
    touch_row(row, key, true, {});
    if (!rows->indexed(i))
      entry_at(row).indexed = false;
  }
  return err;
}

} // namespace darcy::stores
