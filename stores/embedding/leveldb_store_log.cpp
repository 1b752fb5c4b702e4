#include "stores/embedding/leveldb_store.hpp"

#include <unordered_map>

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "compute/hash.hpp"
#include "messages/error.hpp"
#include "stores/embedding/leveldb_layout.hpp"
#include "stores/embedding/row_codec.hpp"

// The LevelDB tier's value log: the index built from it, its live records gone over in order,
// and its collection.
namespace darcy::stores {

using leveldb_layout::db_error;
using leveldb_layout::row_key;
using leveldb_layout::row_prefix;

caf::error leveldb_store::index_from_log() {
  // A key's row is its last record, unless a removal follows it. Opening holds every key until
  // the index is built.
  std::unordered_map<std::string, value_pointer> newest;
  auto record_bytes = row_record_bytes(cfg_.dim, cache_->slot_floats());
  if (auto err = log_->scan(record_bytes, [&](const scanned_record& r) {
        if (r.removal)
          newest.erase(std::string{r.key});
        else
          newest.insert_or_assign(std::string{r.key}, r.at);
        return caf::error{};
      }))
    return err;
  if (auto err = log_->cut_torn_tail())
    return err;
  uint64_t live = 0;
  for (auto& [key, at] : newest) {
    index_->insert(compute::hash_key(key), key.size(), at);
    live += at.length;
  }
  rows_ = newest.size();
  log_->set_garbage(log_->bytes() - std::min(live, log_->bytes()));
  return {};
}

caf::error leveldb_store::for_each_live(const live_record_fn& f, uint32_t below) {
  if (!pointers_in_db_) {
    auto record_bytes = row_record_bytes(cfg_.dim, cache_->slot_floats());
    return log_->scan(
      record_bytes,
      [&](const scanned_record& r) -> caf::error {
        if (r.removal || !index_->holds(compute::hash_key(r.key), r.at))
          return {};
        return f(r.key, r.record, r.at);
      },
      below);
  }
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(leveldb::ReadOptions{})};
  std::string bytes;
  for (it->Seek(std::string(1, row_prefix)); it->Valid() && it->key()[0] == row_prefix;
       it->Next()) {
    std::string_view key{it->key().data() + 1, it->key().size() - 1};
    value_pointer p;
    if (!decode_pointer({it->value().data(), it->value().size()}, p))
      return make_error(errc::corrupt_file,
                        cfg_.path + ": bad pointer for key '" + std::string{key} + "'");
    if (p.generation >= below)
      continue;
    if (auto err = log_->read(p, key, bytes))
      return err;
    if (auto err = f(key, bytes, p))
      return err;
  }
  return it->status().ok() ? caf::error{} : db_error("cannot read " + cfg_.path, it->status());
}

caf::error leveldb_store::for_each_record(
  const std::function<caf::error(std::string_view, const row_record&, const value_pointer*)>& f) {
  if (auto err = finish_pending())
    return err;
  std::vector<float> values, slots;
  auto decoded = [&](std::string_view key, std::string_view bytes, const value_pointer* at) {
    row_record row;
    if (!decode_row_record(key, bytes, cfg_.dim, cache_->slot_floats(), values, slots, row))
      return make_error(errc::corrupt_file,
                        cfg_.path + ": bad record for key '" + std::string{key} + "'");
    return f(key, row, at);
  };
  if (log_)
    return for_each_live([&](std::string_view key, std::string_view bytes,
                             const value_pointer& at) { return decoded(key, bytes, &at); });
  std::unique_ptr<leveldb::Iterator> it{db_->NewIterator(leveldb::ReadOptions{})};
  for (it->Seek(std::string(1, row_prefix)); it->Valid() && it->key()[0] == row_prefix;
       it->Next()) {
    std::string_view key{it->key().data() + 1, it->key().size() - 1};
    if (auto err = decoded(key, {it->value().data(), it->value().size()}, nullptr))
      return err;
  }
  return it->status().ok() ? caf::error{} : db_error("cannot read " + cfg_.path, it->status());
}

caf::error leveldb_store::collect_garbage() {
  if (!log_ || log_->garbage() < std::max(min_garbage_, log_->written_bytes() / 2))
    return {};
  if (auto err = finish_pending())
    return err;
  auto generation = log_->start_generation();
  if (!generation)
    return std::move(generation.error());
  // Every live record moves to the new generation; a crash midway leaves both, each record
  // valid (a scan meets the old ones first), and the next collection moves the rest. Records
  // of a batch an error leaves unwritten are not the rows' places: the indexes must not learn
  // them.
  struct forget_unwritten {
    std::vector<moved_record>& moved;
    ~forget_unwritten() { moved.clear(); }
  } guard{moved_};
  leveldb::WriteBatch batch;
  size_t batched = 0;
  auto err = for_each_live(
    [&](std::string_view key, std::string_view record, const value_pointer& was) -> caf::error {
      auto at = log_->append(key, record);
      if (pointers_in_db_)
        batch.Put(row_key(key), encode_pointer(at));
      moved_.push_back({std::string{key}, at, was, true});
      if (++batched < 4096)
        return {};
      batched = 0;
      auto written = write(batch, false, "cannot collect the value log of ");
      batch.Clear();
      return written;
    },
    *generation);
  if (err)
    return err;
  if (auto err = write(batch, true, "cannot collect the value log of "))
    return err;
  log_->set_garbage(0);
  ++collections_;
  // Every place the index holds is in the new generation now.
  err = log_->drop_generations_below(*generation);
  index_->drop_generations_below(*generation);
  return err;
}

} // namespace darcy::stores
