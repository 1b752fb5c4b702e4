#include "stores/embedding/redis_store.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "compute/hash.hpp"
#include "compute/initializer.hpp"
#include "compute/optimizer.hpp"
#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "stores/embedding/admission.hpp"
#include "stores/embedding/row_codec.hpp"

namespace darcy::stores {

namespace {

constexpr std::chrono::milliseconds redis_timeout{5000};
/// Keys per MGET, rows per MSET, members per SSCAN page.
constexpr size_t chunk = 512;

std::string namespace_of(const redis_location& where, const std::string& name) {
  return where.prefix + ":" + name;
}

// The key's hash first: a record read under another key is refused.
std::string encode_record(const row_record& row) {
  std::string bytes(sizeof(uint64_t), '\0');
  auto hash = compute::hash_key(row.key);
  std::memcpy(bytes.data(), &hash, sizeof hash);
  append_row_record(row, bytes);
  return bytes;
}

bool decode_record(std::string_view key, std::string_view bytes, size_t dim, size_t slots,
                   std::vector<float>& values, std::vector<float>& slot_values, row_record& out) {
  uint64_t hash = 0;
  if (bytes.size() < sizeof hash)
    return false;
  std::memcpy(&hash, bytes.data(), sizeof hash);
  return hash == compute::hash_key(key) &&
         decode_row_record(key, bytes.substr(sizeof hash), dim, slots, values, slot_values, out);
}

// SCAN's MATCH is a glob: a prefix with glob characters must match only itself.
std::string glob_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\')
      out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

caf::error reply_error(const std::string& address, const redis_reply& reply,
                       const std::string& what) {
  if (reply.type == redis_reply::kind::error)
    return make_error(errc::io_error, "redis at " + address + ": " + what + ": " + reply.str);
  return {};
}

caf::error unexpected(const std::string& address, const std::string& what) {
  return make_error(errc::io_error, "redis at " + address + ": unexpected reply to " + what);
}

// Walks a SCAN-family cursor: `command(cursor)` builds the request; f gets each page.
caf::error walk_cursor(const std::function<caf::expected<redis_reply>(const std::string&)>& call,
                       const std::string& address, const std::string& what,
                       const std::function<caf::error(const std::vector<redis_reply>&)>& f) {
  std::string cursor = "0";
  do {
    auto page = call(cursor);
    if (!page)
      return std::move(page.error());
    if (page->type != redis_reply::kind::array || page->elements.size() != 2 ||
        page->elements[1].type != redis_reply::kind::array)
      return unexpected(address, what);
    cursor = page->elements[0].str;
    if (auto err = f(page->elements[1].elements))
      return err;
  } while (cursor != "0");
  return {};
}

// Every shard's index of embedding namespace `ns`.
caf::expected<std::vector<std::string>> index_keys(redis_client& client, const std::string& ns) {
  std::vector<std::string> result;
  auto pattern = glob_escape(ns) + ":index:*";
  auto err = walk_cursor(
    [&](const std::string& cursor) {
      return client.call({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    },
    client.address(), "SCAN",
    [&](const std::vector<redis_reply>& keys) {
      for (auto& k : keys)
        result.push_back(k.str);
      return caf::error{};
    });
  if (err)
    return err;
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

} // namespace

redis_store::redis_store(de_config cfg, redis_location where, std::unique_ptr<redis_client> client,
                         std::unique_ptr<memory_store> cache, redis_clock clock)
  : write_behind_store(cfg, std::move(cache)),
    where_(std::move(where)),
    namespace_(namespace_of(where_, cfg_.name)),
    index_(namespace_ + ":index:shard-" + std::to_string(where_.shard.value_or(0))),
    client_(std::move(client)),
    clock_(clock ? std::move(clock) : redis_clock{[] { return std::chrono::steady_clock::now(); }}),
    staleness_(cfg_.staleness_ms) {
}

redis_store::~redis_store() {
  flush();
}

caf::expected<std::unique_ptr<redis_store>> redis_store::open(const de_config& cfg,
                                                              redis_clock clock) {
  if (cfg.eviction.kind != eviction_kind::none)
    return make_error(errc::invalid_config,
                      "embedding '" + cfg.name + "': eviction is a memory-backend feature");
  auto where = parse_redis_location(cfg.path);
  if (!where)
    return std::move(where.error());
  auto cache = make_cache(cfg);
  if (!cache)
    return std::move(cache.error());
  auto client = redis_client::connect(*where, redis_timeout);
  if (!client)
    return std::move(client.error());
  std::unique_ptr<redis_store> store{new redis_store(cfg, std::move(*where), std::move(*client),
                                                     std::move(*cache), std::move(clock))};
  if (auto err = store->start_admission())
    return err;
  if (auto err = store->prepare(!cfg.read_only))
    return err;
  return store;
}

caf::expected<std::unique_ptr<redis_store>> redis_store::open_reader(const std::string& url,
                                                                     const std::string& name,
                                                                     uint64_t cache_bytes,
                                                                     uint32_t staleness_ms,
                                                                     redis_clock clock) {
  auto where = parse_redis_location(url);
  if (!where)
    return std::move(where.error());
  auto client = redis_client::connect(*where, redis_timeout);
  if (!client)
    return std::move(client.error());
  auto key = namespace_of(*where, name) + ":config";
  auto reply = (*client)->call({"GET", key});
  if (!reply)
    return std::move(reply.error());
  if (reply->type != redis_reply::kind::string)
    return make_error(errc::not_found, "redis at " + where->address() + " holds no embedding '" +
                                         name + "' (no " + key + ")");
  auto cfg = decode_config(reply->str, "redis key " + key);
  if (!cfg)
    return std::move(cfg.error());
  cfg->backend = backend_kind::redis;
  cfg->path = url;
  cfg->read_only = true;
  cfg->admission = {};
  cfg->cache_bytes = cache_bytes;
  cfg->staleness_ms = staleness_ms;
  return open(*cfg, std::move(clock));
}

caf::error redis_store::prepare(bool writer) {
  auto format_key = namespace_ + ":format";
  auto format = row_format(cfg_, slot_floats());
  std::vector<redis_command> commands;
  if (writer)
    commands.push_back({"SET", format_key, format, "NX"});
  commands.push_back({"GET", format_key});
  auto replies = client_->run(commands);
  if (!replies)
    return std::move(replies.error());
  auto& stored = replies->back();
  if (auto err = reply_error(client_->address(), stored, "GET " + format_key))
    return err;
  if (stored.type != redis_reply::kind::string)
    return make_error(errc::not_found,
                      "redis at " + client_->address() + " holds no embedding '" + cfg_.name + "'");
  if (stored.str != format)
    return make_error(errc::corrupt_file, "redis at " + client_->address() + " holds '" +
                                            cfg_.name + "' with " + stored.str +
                                            ", the embedding needs " + format);
  if (writer) {
    auto written = cfg_;
    written.read_only = false;
    if (auto reply = client_->call({"SET", namespace_ + ":config", encode_config(written)}); !reply)
      return std::move(reply.error());
  }
  auto indexes = indexes_read();
  if (!indexes)
    return std::move(indexes.error());
  for (auto& index : *indexes) {
    auto count = client_->call({"SCARD", index});
    if (!count)
      return std::move(count.error());
    rows_ += static_cast<uint64_t>(count->integer);
  }
  restarts_seen_ = client_->restarts();
  return {};
}

caf::error redis_store::remove(const de_config& cfg, uint32_t shard_count) {
  auto where = parse_redis_location(cfg.path);
  if (!where)
    return std::move(where.error());
  auto shard = where->shard.value_or(0);
  if (shard >= shard_count)
    return make_error(errc::invalid_argument,
                      "shard " + std::to_string(shard) + " of " + std::to_string(shard_count));
  auto client = redis_client::connect(*where, redis_timeout);
  if (!client)
    return std::move(client.error());
  auto ns = namespace_of(*where, cfg.name);
  auto indexes = index_keys(**client, ns);
  if (!indexes)
    return std::move(indexes.error());
  // Only this shard's keys are touched: another shard removing or writing its own rows at the
  // same time never meets them.
  for (auto& index : *indexes) {
    auto err = walk_cursor(
      [&](const std::string& cursor) {
        return (*client)->call({"SSCAN", index, cursor, "COUNT", std::to_string(chunk)});
      },
      (*client)->address(), "SSCAN",
      [&](const std::vector<redis_reply>& members) -> caf::error {
        redis_command del{"DEL"};
        redis_command srem{"SREM", index};
        for (auto& m : members)
          if (compute::shard_of_key(m.str, shard_count) == shard) {
            del.push_back(ns + ":r:" + m.str);
            srem.push_back(m.str);
          }
        if (srem.size() == 2)
          return {};
        auto replies = (*client)->run({del, srem});
        if (!replies)
          return std::move(replies.error());
        for (auto& reply : *replies)
          if (auto e = reply_error((*client)->address(), reply, "DEL/SREM"))
            return e;
        return {};
      });
    if (err)
      return err;
  }
  return {};
}

caf::expected<std::vector<std::string>> redis_store::indexes_read() {
  if (cfg_.read_only && !where_.shard)
    return index_keys(*client_, namespace_);
  return std::vector<std::string>{index_};
}

std::string redis_store::row_key(std::string_view key) const {
  std::string result;
  result.reserve(namespace_.size() + 3 + key.size());
  result.append(namespace_).append(":r:").append(key);
  return result;
}

caf::expected<std::vector<redis_reply>> redis_store::run(
  const std::vector<redis_command>& commands) {
  if (lost_)
    return lost_;
  auto replies = client_->run(commands);
  if (!replies || client_->restarts() == restarts_seen_)
    return replies;
  restarts_seen_ = client_->restarts();
  auto format = client_->call({"GET", namespace_ + ":format"});
  if (!format)
    return std::move(format.error());
  if (format->type != redis_reply::kind::string) {
    lost_ = make_error(errc::io_error, "redis at " + client_->address() +
                                         " restarted without embedding '" + cfg_.name +
                                         "': restore it from a checkpoint");
    return lost_;
  }
  // Redis kept the embedding, perhaps from before this store's last writes: the cached rows
  // are written again.
  auto now = clock_();
  for_each_entry([&](std::string_view key, entry& e) { mark_dirty(key, e, now); });
  return replies;
}

void redis_store::mark_dirty(std::string_view key, entry& e, time_point at) {
  if (e.dirty)
    return;
  e.dirty = true;
  e.dirty_since = at;
  dirty_queue_.emplace_back(at, std::string{key});
}

caf::error redis_store::load(std::span<const std::string_view> keys, bool create,
                             std::span<uint32_t> rows) {
  auto now = clock_();
  std::vector<std::string_view> fetch;
  for (size_t k = 0; k < keys.size(); ++k) {
    auto key = keys[k];
    auto* e = entry_of(key);
    bool usable =
      e != nullptr && (e->dirty || (staleness_.count() > 0 && now - e->fetched <= staleness_));
    if (usable) {
      touch(key, false, now);
      ++tier_hits_;
    } else {
      fetch.push_back(key);
      ++tier_misses_;
    }
  }
  if (!fetch.empty())
    if (auto err = fetch_rows(fetch, create, now))
      return err;
  for (size_t k = 0; k < keys.size(); ++k)
    rows[k] = row_of(keys[k]);
  return {};
}

caf::error redis_store::fetch_rows(std::vector<std::string_view>& fetch, bool create,
                                   time_point now) {
  std::sort(fetch.begin(), fetch.end());
  fetch.erase(std::unique(fetch.begin(), fetch.end()), fetch.end());
  std::vector<redis_command> commands;
  for (size_t begin = 0; begin < fetch.size(); begin += chunk) {
    redis_command mget{"MGET"};
    for (size_t k = begin; k < std::min(fetch.size(), begin + chunk); ++k)
      mget.push_back(row_key(fetch[k]));
    commands.push_back(std::move(mget));
  }
  auto replies = run(commands);
  if (!replies)
    return std::move(replies.error());
  std::vector<float> values, slots;
  for (size_t c = 0; c < replies->size(); ++c) {
    auto& reply = (*replies)[c];
    if (auto err = reply_error(client_->address(), reply, "MGET"))
      return err;
    auto first = c * chunk;
    if (reply.type != redis_reply::kind::array || reply.elements.size() != commands[c].size() - 1)
      return unexpected(client_->address(), "MGET");
    for (size_t j = 0; j < reply.elements.size(); ++j) {
      auto key = fetch[first + j];
      auto& element = reply.elements[j];
      if (element.type == redis_reply::kind::string) {
        row_record row;
        if (!decode_record(key, element.str, cfg_.dim, slot_floats(), values, slots, row))
          return make_error(errc::corrupt_file, "redis at " + client_->address() +
                                                  ": bad record for key '" + std::string{key} +
                                                  "' of embedding '" + cfg_.name + "'");
        if (auto err = cache_->import_row(row))
          return err;
        touch(key, false, now);
        entry_of(key)->fetched = now;
        continue;
      }
      // Absent from Redis: a stale cached copy goes, a new row may come.
      forget(key);
      if (create && create_row(key) != none) {
        touch(key, true, now);
        entry_of(key)->indexed = false;
      }
    }
  }
  return {};
}

caf::error redis_store::write_back(std::vector<std::string> keys, time_point now) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<redis_command> commands;
  redis_command mset{"MSET"};
  redis_command sadd{"SADD", index_};
  for (auto& key : keys) {
    auto row = cache_->find(key);
    if (!row)
      continue;
    mset.push_back(row_key(key));
    mset.push_back(encode_record({row->key, row->values, row->slots, row->meta->frequency,
                                  row->meta->updates, row->meta->last_update}));
    if (auto* e = entry_of(key); e && !e->indexed)
      sadd.push_back(key);
    if (mset.size() >= 2 * chunk + 1)
      commands.push_back(std::exchange(mset, redis_command{"MSET"}));
    if (sadd.size() >= chunk + 2)
      commands.push_back(std::exchange(sadd, redis_command{"SADD", index_}));
  }
  if (mset.size() > 1)
    commands.push_back(std::move(mset));
  if (sadd.size() > 2)
    commands.push_back(std::move(sadd));
  if (commands.empty())
    return {};
  auto replies = run(commands);
  if (!replies)
    return std::move(replies.error());
  for (size_t c = 0; c < replies->size(); ++c) {
    auto& reply = (*replies)[c];
    if (auto err = reply_error(client_->address(), reply, commands[c][0]))
      return err;
    if (commands[c][0] == "SADD")
      rows_ += static_cast<uint64_t>(reply.integer);
  }
  for (auto& key : keys) {
    auto* e = entry_of(key);
    if (e == nullptr)
      continue;
    e->dirty = false;
    e->indexed = true;
    e->fetched = now;
  }
  return {};
}

caf::error redis_store::settle() {
  auto now = clock_();
  std::vector<std::pair<time_point, std::string>> due;
  while (!dirty_queue_.empty() && now - dirty_queue_.front().first >= staleness_) {
    auto& [since, key] = dirty_queue_.front();
    auto* e = entry_of(key);
    if (e != nullptr && e->dirty && e->dirty_since == since)
      due.emplace_back(since, std::move(key));
    dirty_queue_.pop_front();
  }
  // Past the budget, evict an eighth of it at once, so that write-backs come in batches.
  std::vector<std::string> evicted;
  if (cache_->size() > capacity_)
    evicted = oldest(capacity_ - capacity_ / 8);
  std::vector<std::string> writes;
  for (auto& d : due)
    writes.push_back(d.second);
  for (auto& key : evicted)
    if (auto* e = entry_of(key); e && e->dirty)
      writes.push_back(key);
  if (auto err = write_back(std::move(writes), now)) {
    for (auto& d : due)
      dirty_queue_.push_front(std::move(d));
    return err;
  }
  for (auto& key : evicted)
    forget(key);
  return {};
}

caf::error redis_store::flush() {
  return write_back(dirty_keys(), clock_());
}

caf::error redis_store::read_through(std::span<const std::string_view> keys, std::span<float> out) {
  auto dim = cfg_.dim;
  std::vector<redis_command> commands;
  for (size_t begin = 0; begin < keys.size(); begin += chunk) {
    redis_command mget{"MGET"};
    for (size_t k = begin; k < std::min(keys.size(), begin + chunk); ++k)
      mget.push_back(row_key(keys[k]));
    commands.push_back(std::move(mget));
  }
  auto replies = run(commands);
  if (!replies)
    return std::move(replies.error());
  tier_misses_ += keys.size();
  std::vector<float> values, slots;
  for (size_t c = 0; c < replies->size(); ++c) {
    auto& reply = (*replies)[c];
    if (auto err = reply_error(client_->address(), reply, "MGET"))
      return err;
    if (reply.type != redis_reply::kind::array || reply.elements.size() != commands[c].size() - 1)
      return unexpected(client_->address(), "MGET");
    for (size_t j = 0; j < reply.elements.size(); ++j) {
      auto k = c * chunk + j;
      auto dest = out.subspan(k * dim, dim);
      auto& element = reply.elements[j];
      row_record row;
      if (element.type != redis_reply::kind::string) {
        if (!cfg_.default_value.empty())
          std::copy(cfg_.default_value.begin(), cfg_.default_value.end(), dest.begin());
        else
          compute::initialize_row(cfg_.init, compute::hash_key(keys[k]), dest);
      } else if (decode_record(keys[k], element.str, dim, slot_floats(), values, slots, row)) {
        std::copy(row.values.begin(), row.values.end(), dest.begin());
      } else {
        return make_error(errc::corrupt_file, "redis at " + client_->address() +
                                                ": bad record for key '" + std::string{keys[k]} +
                                                "' of embedding '" + cfg_.name + "'");
      }
    }
  }
  return {};
}

caf::error redis_store::lookup(std::span<const std::string_view> keys,
                               std::span<const uint64_t> hashes, std::span<float> out) {
  if (!cfg_.read_only || staleness_.count() > 0)
    return write_behind_store::lookup(keys, hashes, out);
  if (auto err = check_lookup(keys.size(), out))
    return err;
  return read_through(keys, out);
}

uint64_t redis_store::rows() const {
  auto n = rows_;
  for_each_entry([&](std::string_view, const entry& e) { n += e.indexed ? 0 : 1; });
  return n;
}

caf::error redis_store::export_rows(const std::function<void(const row_record&)>& f) {
  if (auto err = flush())
    return err;
  auto indexes = indexes_read();
  if (!indexes)
    return std::move(indexes.error());
  std::unordered_set<std::string> seen;
  std::vector<float> values, slots;
  for (auto& index : *indexes) {
    auto err = walk_cursor(
      [&](const std::string& cursor) -> caf::expected<redis_reply> {
        auto replies = run({{"SSCAN", index, cursor, "COUNT", std::to_string(chunk)}});
        if (!replies)
          return std::move(replies.error());
        return std::move(replies->front());
      },
      client_->address(), "SSCAN",
      [&](const std::vector<redis_reply>& members) -> caf::error {
        redis_command mget{"MGET"};
        std::vector<std::string> keys;
        for (auto& m : members)
          if (seen.insert(m.str).second) {
            keys.push_back(m.str);
            mget.push_back(row_key(m.str));
          }
        if (keys.empty())
          return {};
        auto replies = run({mget});
        if (!replies)
          return std::move(replies.error());
        auto& reply = replies->front();
        if (reply.type != redis_reply::kind::array || reply.elements.size() != keys.size())
          return unexpected(client_->address(), "MGET");
        for (size_t j = 0; j < keys.size(); ++j) {
          if (reply.elements[j].type != redis_reply::kind::string)
            continue; // listed, then deleted
          row_record row;
          if (!decode_record(keys[j], reply.elements[j].str, cfg_.dim, slot_floats(), values, slots,
                             row))
            return make_error(errc::corrupt_file, "redis at " + client_->address() +
                                                    ": bad record for key '" + keys[j] + "'");
          f(row);
        }
        return {};
      });
    if (err)
      return err;
  }
  return {};
}

caf::error redis_store::import_row(const row_record& row) {
  if (row.values.size() != cfg_.dim || row.slots.size() != slot_floats())
    return make_error(errc::dimension_mismatch, "row '" + std::string{row.key} +
                                                  "' does not fit embedding '" + cfg_.name + "'");
  auto now = clock_();
  sampling_set(row.key, row.frequency);
  if (auto err = cache_->import_row(row))
    return err;
  touch(row.key, true, now);
  entry_of(row.key)->indexed = false;
  return settle_within_budget();
}

} // namespace darcy::stores
