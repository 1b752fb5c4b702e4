#include "stores/embedding/redis_store.hpp"

#include <algorithm>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "compute/placement.hpp"
#include "messages/error.hpp"
#include "ops/testing/redis_server.hpp"
#include "stores/embedding/de_config.hpp"

namespace darcy::stores {
namespace {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

// A clock the test moves by hand.
struct manual_clock {
  clock_type::time_point now{};
  redis_clock function() {
    return [this] { return now; };
  }
};

class redis_store_test : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    auto server = testing::redis_server::start({});
    ASSERT_TRUE(server) << render(error_of(server));
    shared_ = std::move(*server);
  }
  static void TearDownTestSuite() { shared_.reset(); }

  // Each test its own prefix: tests share one server.
  de_config config(uint32_t staleness_ms = 1000, uint64_t cache_bytes = 1 << 20,
                   testing::redis_server* server = nullptr) {
    de_config cfg;
    cfg.name = "items";
    cfg.dim = 4;
    cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
    cfg.backend = backend_kind::redis;
    cfg.path = (server ? server : shared_.get())->url(prefix());
    cfg.cache_bytes = cache_bytes;
    cfg.staleness_ms = staleness_ms;
    return cfg;
  }

  static std::string prefix() {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string{"t-"} + info->name();
  }

  std::unique_ptr<redis_store> open(const de_config& cfg, redis_clock clock = {}) {
    auto store = redis_store::open(cfg, std::move(clock));
    EXPECT_TRUE(store) << render(error_of(store));
    return store ? std::move(*store) : nullptr;
  }

  static caf::expected<std::vector<float>> try_lookup(embedding_store& store,
                                                      const std::vector<std::string>& keys) {
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<float> out(keys.size() * store.dim());
    if (auto err = store.lookup(views, out))
      return err;
    return out;
  }

  static std::vector<float> lookup(embedding_store& store, const std::vector<std::string>& keys) {
    auto out = try_lookup(store, keys);
    EXPECT_TRUE(out) << render(error_of(out));
    return out ? *out : std::vector<float>{};
  }

  static void update(embedding_store& store, const std::vector<std::string>& keys, float g,
                     int64_t step = 1) {
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<float> grads(keys.size() * store.dim(), g);
    ASSERT_FALSE(store.update(views, grads, step));
  }

  static std::map<std::string, std::vector<float>> all_rows(embedding_store& store) {
    std::map<std::string, std::vector<float>> rows;
    EXPECT_FALSE(store.export_rows([&](const row_record& r) {
      auto& row = rows[std::string{r.key}];
      row.assign(r.values.begin(), r.values.end());
      row.insert(row.end(), r.slots.begin(), r.slots.end());
    }));
    return rows;
  }

  static caf::error raw(testing::redis_server& server, const redis_command& command) {
    auto client = redis_client::connect({"127.0.0.1", server.port()}, milliseconds(5000));
    if (!client)
      return std::move(client.error());
    auto reply = (*client)->call(command);
    return reply ? caf::error{} : std::move(reply.error());
  }

  static caf::expected<redis_reply> raw_get(testing::redis_server& server, const std::string& key) {
    auto client = redis_client::connect({"127.0.0.1", server.port()}, milliseconds(5000));
    if (!client)
      return std::move(client.error());
    return (*client)->call({"GET", key});
  }

  static std::unique_ptr<testing::redis_server> shared_;
};

std::unique_ptr<testing::redis_server> redis_store_test::shared_;

TEST_F(redis_store_test, agrees_with_the_memory_store_at_every_staleness_bound) {
  struct staleness_case {
    uint32_t staleness_ms;
    int clock_step_ms;
  };
  for (auto c : {staleness_case{0, 1}, staleness_case{30, 7}, staleness_case{4000000000u, 1}}) {
    SCOPED_TRACE("staleness " + std::to_string(c.staleness_ms));
    auto cfg = config(c.staleness_ms, 1);
    cfg.name = "items" + std::to_string(c.staleness_ms);
    manual_clock clock;
    auto remote = open(cfg, clock.function());
    ASSERT_TRUE(remote);
    ASSERT_EQ(remote->cache_capacity(), 16u) << "the smallest cache forces write-backs";
    auto mem_cfg = cfg;
    mem_cfg.backend = backend_kind::memory;
    auto mem = make_store(mem_cfg);
    ASSERT_TRUE(mem);
    std::mt19937 rng{3};
    std::uniform_int_distribution<int> pick{0, 199};
    std::normal_distribution<float> noise{0, 0.5f};
    for (int step = 0; step < 200; ++step) {
      clock.now += milliseconds(c.clock_step_ms);
      std::vector<std::string> keys;
      for (int k = 0; k < 8; ++k)
        keys.push_back("key" + std::to_string(pick(rng)));
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      ASSERT_EQ(lookup(*remote, keys), lookup(**mem, keys)) << "step " << step;
      std::vector<std::string_view> views(keys.begin(), keys.end());
      std::vector<float> grads(keys.size() * 4);
      for (auto& g : grads)
        g = noise(rng);
      ASSERT_FALSE(remote->update(views, grads, step));
      ASSERT_FALSE((*mem)->update(views, grads, step));
      ASSERT_LE(remote->cached_rows(), 16u);
    }
    EXPECT_EQ(remote->stats().rows, (*mem)->stats().rows);
    EXPECT_EQ(all_rows(*remote), all_rows(**mem)) << "values and optimizer slots";
  }
}

TEST_F(redis_store_test, rows_survive_closing_and_reopening) {
  auto cfg = config();
  std::vector<float> before;
  {
    auto store = open(cfg);
    update(*store, {"x", "y"}, 0.3f);
    before = lookup(*store, {"x", "y"});
  }
  auto store = open(cfg);
  EXPECT_EQ(store->stats().rows, 2u);
  EXPECT_EQ(lookup(*store, {"x", "y"}), before);
}

TEST_F(redis_store_test, shards_share_one_redis_and_a_reader_serves_them_without_shard_servers) {
  auto cfg = config(0);
  std::vector<std::unique_ptr<redis_store>> shards;
  for (uint32_t s = 0; s < 2; ++s)
    shards.push_back(open(shard_config(cfg, s)));
  std::vector<std::string> keys;
  for (int k = 0; k < 40; ++k)
    keys.push_back("word" + std::to_string(k));
  std::map<std::string, std::vector<float>> written;
  for (auto& key : keys) {
    auto& owner = *shards[compute::shard_of_key(key, 2)];
    update(owner, {key}, 0.25f);
    written[key] = lookup(owner, {key});
  }
  EXPECT_GT(shards[0]->stats().rows, 0u);
  EXPECT_GT(shards[1]->stats().rows, 0u);
  auto reader = redis_store::open_reader(shared_->url(prefix()), "items", 1 << 20, 1000);
  ASSERT_TRUE(reader) << render(error_of(reader));
  EXPECT_TRUE((*reader)->config().read_only);
  EXPECT_EQ((*reader)->dim(), 4u);
  EXPECT_EQ((*reader)->stats().rows, keys.size()) << "every shard's rows";
  for (auto& key : keys)
    EXPECT_EQ(lookup(**reader, {key}), written[key]) << key;
  EXPECT_EQ(all_rows(**reader).size(), keys.size());
}

TEST_F(redis_store_test, a_reader_sees_a_change_once_its_staleness_bound_has_passed) {
  manual_clock writer_clock, reader_clock;
  auto writer = open(config(100), writer_clock.function());
  auto reader = open(
    [&] {
      auto cfg = config(50);
      cfg.read_only = true;
      return cfg;
    }(),
    reader_clock.function());
  update(*writer, {"k"}, 0.5f);
  ASSERT_FALSE(writer->flush());
  auto first = lookup(*reader, {"k"});
  EXPECT_EQ(first, lookup(*writer, {"k"}));
  update(*writer, {"k"}, 0.5f);
  auto second = lookup(*writer, {"k"});
  ASSERT_NE(first, second);
  reader_clock.now += milliseconds(200);
  EXPECT_EQ(lookup(*reader, {"k"}), first) << "the writer keeps its change up to 100 ms";
  writer_clock.now += milliseconds(100);
  lookup(*writer, {"other"}); // the first call after the bound writes the change back
  EXPECT_EQ(lookup(*reader, {"k"}), first) << "the reader trusts its copy up to 50 ms";
  reader_clock.now += milliseconds(51);
  EXPECT_EQ(lookup(*reader, {"k"}), second);
  EXPECT_GT(reader->cache_hits(), 0u);
  EXPECT_GT(reader->cache_misses(), 0u);
}

TEST_F(redis_store_test, a_read_only_store_never_creates_rows) {
  auto writer = open(config(0));
  update(*writer, {"known"}, 0.1f);
  auto cfg = config(0);
  cfg.read_only = true;
  cfg.default_value = {1, 2, 3, 4};
  auto reader = open(cfg);
  EXPECT_EQ(lookup(*reader, {"unknown"}), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(reader->stats().rows, 1u);
  EXPECT_TRUE(
    is(reader->update(std::vector<std::string_view>{"known"}, std::vector<float>(4, 0.1f), 1),
       errc::read_only));
  auto stored = raw_get(*shared_, prefix() + ":items:r:unknown");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->type, redis_reply::kind::nil);
  auto missing = redis_store::open_reader(shared_->url(prefix()), "nothing", 1 << 20, 0);
  EXPECT_TRUE(is(error_of(missing), errc::not_found));
}

TEST_F(redis_store_test, dropped_connections_are_retried_and_rows_stay_right) {
  auto store = open(config(0));
  update(*store, {"a", "b", "c"}, 0.2f);
  auto before = lookup(*store, {"a", "b", "c"});
  for (int round = 0; round < 3; ++round) {
    ASSERT_FALSE(shared_->drop_connections());
    EXPECT_EQ(lookup(*store, {"a", "b", "c"}), before) << "round " << round;
  }
}

TEST_F(redis_store_test, a_restart_that_loses_the_rows_fails_every_later_call) {
  auto server = testing::redis_server::start({});
  ASSERT_TRUE(server);
  auto store = open(config(0, 1 << 20, server->get()));
  update(*store, {"a", "b"}, 0.2f);
  ASSERT_FALSE((*server)->restart());
  for (int call = 0; call < 2; ++call) {
    auto rows = try_lookup(*store, {"a", "b"});
    ASSERT_FALSE(rows) << "call " << call << ": no row may come from the empty Redis";
    EXPECT_TRUE(is(rows.error(), errc::io_error));
    EXPECT_NE(render(rows.error()).find("restarted without embedding 'items'"), std::string::npos)
      << render(rows.error());
  }
}

TEST_F(redis_store_test, a_persistent_restart_keeps_serving_the_same_rows) {
  auto server = testing::redis_server::start({.append_only = true});
  ASSERT_TRUE(server);
  auto store = open(config(0, 1 << 20, server->get()));
  update(*store, {"a", "b"}, 0.2f);
  auto before = lookup(*store, {"a", "b"});
  ASSERT_FALSE((*server)->restart());
  EXPECT_EQ(lookup(*store, {"a", "b"}), before);
  auto reopened = open(config(0, 1 << 20, server->get()));
  EXPECT_EQ(lookup(*reopened, {"a", "b"}), before);
}

TEST_F(redis_store_test, an_unreachable_redis_is_a_clear_error) {
  auto server = testing::redis_server::start({});
  ASSERT_TRUE(server);
  auto cfg = config(0, 1 << 20, server->get());
  auto store = open(cfg);
  (*server)->kill();
  auto rows = try_lookup(*store, {"a"});
  ASSERT_FALSE(rows);
  EXPECT_TRUE(is(rows.error(), errc::io_error));
  EXPECT_NE(render(rows.error()).find("127.0.0.1:" + std::to_string((*server)->port())),
            std::string::npos)
    << render(rows.error());
  EXPECT_TRUE(is(error_of(redis_store::open(cfg)), errc::io_error));
}

TEST_F(redis_store_test, a_record_under_the_wrong_key_or_of_the_wrong_size_is_refused) {
  auto writer = open(config(0));
  update(*writer, {"a"}, 0.2f);
  auto a = raw_get(*shared_, prefix() + ":items:r:a");
  ASSERT_TRUE(a);
  struct bad_record {
    const char* what;
    std::string bytes;
  };
  for (auto& c : {bad_record{"a's record under b", a->str}, bad_record{"too short", "xyz"},
                  bad_record{"one byte too long", a->str + "!"}}) {
    SCOPED_TRACE(c.what);
    ASSERT_FALSE(raw(*shared_, {"SET", prefix() + ":items:r:b", c.bytes}));
    auto cfg = config(0);
    cfg.read_only = true;
    auto reader = open(cfg);
    auto rows = try_lookup(*reader, {"b"});
    ASSERT_FALSE(rows);
    EXPECT_TRUE(is(rows.error(), errc::corrupt_file)) << render(rows.error());
  }
}

TEST_F(redis_store_test, an_embedding_of_another_shape_is_refused) {
  auto writer = open(config());
  update(*writer, {"a"}, 0.2f);
  struct shape_case {
    const char* what;
    uint32_t dim;
    optimizer_kind optimizer;
  };
  for (auto c : {shape_case{"dim", 8, optimizer_kind::adagrad},
                 shape_case{"optimizer", 4, optimizer_kind::adam}}) {
    SCOPED_TRACE(c.what);
    auto cfg = config();
    cfg.dim = c.dim;
    cfg.optimizer.kind = c.optimizer;
    EXPECT_TRUE(is(error_of(redis_store::open(cfg)), errc::corrupt_file));
  }
}

TEST_F(redis_store_test, a_shard_removes_only_the_rows_it_owns_even_after_a_reshard) {
  auto cfg = config(0);
  std::vector<std::string> keys;
  for (int k = 0; k < 30; ++k)
    keys.push_back("k" + std::to_string(k));
  {
    std::vector<std::unique_ptr<redis_store>> two;
    for (uint32_t s = 0; s < 2; ++s)
      two.push_back(open(shard_config(cfg, s)));
    for (auto& key : keys)
      update(*two[compute::shard_of_key(key, 2)], {key}, 0.1f);
  }
  // Three shards now: shard 1 of 3 removes its keys from both old indexes.
  ASSERT_FALSE(redis_store::remove(shard_config(cfg, 1), 3));
  for (auto& key : keys) {
    auto stored = raw_get(*shared_, prefix() + ":items:r:" + key);
    ASSERT_TRUE(stored);
    bool owned = compute::shard_of_key(key, 3) == 1;
    EXPECT_EQ(stored->type == redis_reply::kind::nil, owned) << key;
  }
  auto reader = redis_store::open_reader(shared_->url(prefix()), "items", 1 << 20, 0);
  ASSERT_TRUE(reader);
  size_t kept = 0;
  for (auto& key : keys)
    kept += compute::shard_of_key(key, 3) == 1 ? 0 : 1;
  EXPECT_EQ((*reader)->stats().rows, kept);
}

TEST_F(redis_store_test, bad_locations_and_eviction_are_refused) {
  for (auto* url : {"http://127.0.0.1:6379", "redis://", "redis://host:0", "redis://host:x",
                    "redis://host:6379/p/shard-x"}) {
    SCOPED_TRACE(url);
    auto cfg = config();
    cfg.path = url;
    EXPECT_TRUE(is(error_of(make_store(cfg)), errc::invalid_config));
  }
  auto cfg = config();
  cfg.eviction = {eviction_kind::lru, 0, 10};
  EXPECT_TRUE(is(error_of(make_store(cfg)), errc::invalid_config));
}

TEST_F(redis_store_test, locations_name_host_port_prefix_and_shard) {
  struct location_case {
    const char* url;
    std::string host;
    uint16_t port;
    std::string prefix;
    std::optional<uint32_t> shard;
  };
  for (auto& c : {location_case{"redis://h", "h", 6379, "darcy", {}},
                  location_case{"redis://10.0.0.1:7000/run1", "10.0.0.1", 7000, "run1", {}},
                  location_case{"redis://h:1/a/b/shard-3", "h", 1, "a/b", 3u},
                  location_case{"redis://h:1/shard-0", "h", 1, "darcy", 0u}}) {
    SCOPED_TRACE(c.url);
    auto where = parse_redis_location(c.url);
    ASSERT_TRUE(where) << render(error_of(where));
    EXPECT_EQ(where->host, c.host);
    EXPECT_EQ(where->port, c.port);
    EXPECT_EQ(where->prefix, c.prefix);
    EXPECT_EQ(where->shard, c.shard);
  }
}

TEST_F(redis_store_test, a_checkpoint_stream_moves_rows_into_another_redis_embedding) {
  auto source = open(config());
  update(*source, {"a", "b", "c"}, 0.4f, 7);
  std::stringstream stream;
  ASSERT_FALSE(source->export_to(stream, "items"));
  auto cfg = config();
  cfg.name = "copy";
  auto target = open(cfg);
  ASSERT_FALSE(target->import_from(stream));
  EXPECT_EQ(target->stats().rows, 3u);
  EXPECT_EQ(all_rows(*target), all_rows(*source));
}

} // namespace
} // namespace darcy::stores
