#include "apps/bench/embedding_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "actors/actor_types.hpp"
#include "actors/embedding/direct_embedding.hpp"
#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "apps/bench/key_stream.hpp"
#include "apps/bench/node_pair.hpp"
#include "apps/bench/rule_bench.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/client.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/process/process.hpp"
#include "runtime/system_config.hpp"
#include "stores/embedding/de_config.hpp"
#include "stores/embedding/leveldb_store.hpp"

namespace darcy::apps {

namespace {

using clock = std::chrono::steady_clock;
using strings = key_strings;

// Distinct keys of each batch, as update batches must be.
std::vector<strings> unique_batches(const std::vector<strings>& batches) {
  std::vector<strings> result;
  for (auto b : batches) {
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    result.push_back(std::move(b));
  }
  return result;
}

bool runs(const embedding_bench_options& o, std::string_view path) {
  std::string_view list = o.paths;
  while (!list.empty()) {
    auto comma = list.find(',');
    if (list.substr(0, comma) == path)
      return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

de_config bench_config(const embedding_bench_options& o) {
  de_config cfg;
  cfg.name = "bench";
  cfg.dim = o.dim;
  cfg.optimizer = {optimizer_kind::adagrad, 0.05f};
  cfg.max_batch = std::max<uint32_t>(o.batch, 1 << 16);
  return cfg;
}

// Creates every key (in batches), so that the stream hits existing rows.
template <class Lookup>
void populate(uint64_t n, uint32_t batch, Lookup lookup) {
  strings keys;
  for (uint64_t id = 0; id < n; ++id) {
    keys.push_back(key_of(id));
    if (keys.size() == batch || id + 1 == n) {
      lookup(keys);
      keys.clear();
    }
  }
}

struct path_result {
  double lookup = 0;
  double update = 0;
};

void report(const char* path, const path_result& r) {
  std::cout << std::left << std::setw(22) << path << std::right << std::fixed
            << std::setprecision(0) << std::setw(14) << r.lookup << std::setw(14) << r.update
            << std::endl;
}

} // namespace

caf::error run_embedding_bench(const embedding_bench_options& o) {
  std::cout << "embedding: " << o.keys << " keys, dim " << o.dim << ", Zipf(" << o.zipf << "), "
            << o.batches << " batches of " << o.batch << ", " << std::thread::hardware_concurrency()
            << " cores" << std::endl;
  auto ids = zipf_stream(o.keys, o.batches, o.batch, o.zipf);
  auto lookups = key_batches(ids);
  auto updates = unique_batches(lookups);
  auto cfg = bench_config(o);
  std::vector<float> out(size_t{o.batch} * o.dim);
  std::vector<float> grads(size_t{o.batch} * o.dim, 0.01f);
  std::cout << std::left << std::setw(22) << "path" << std::right << std::setw(14) << "lookup/s"
            << std::setw(14) << "update/s" << std::endl;

  // The dictionary baseline: a dense matrix gathered by integer id.
  double dense_rows_s = 0;
  {
    std::vector<float> dense(o.keys * o.dim);
    std::mt19937 rng{1};
    std::uniform_real_distribution<float> u{-0.05f, 0.05f};
    for (auto& x : dense)
      x = u(rng);
    dense_rows_s = rows_per_second(ids, o.repetitions, [&](const std::vector<uint64_t>& b) {
      for (size_t k = 0; k < b.size(); ++k)
        std::memcpy(out.data() + k * o.dim, dense.data() + b[k] * o.dim, o.dim * sizeof(float));
    });
    report("dense gather", {dense_rows_s, 0});
  }

  // The store, called directly.
  path_result store;
  double bytes_per_row = 0, raw_bytes_per_row = 0;
  if (runs(o, "store")) {
    auto s = stores::make_store(cfg);
    if (!s)
      return s.error();
    auto& st = **s;
    auto lookup = [&](const strings& keys) {
      std::vector<std::string_view> views(keys.begin(), keys.end());
      std::vector<float> rows(keys.size() * o.dim);
      st.lookup(views, rows);
    };
    populate(o.keys, o.batch, lookup);
    auto stats = st.stats();
    bytes_per_row = static_cast<double>(stats.bytes) / stats.rows;
    raw_bytes_per_row = static_cast<double>(stats.raw_bytes) / stats.rows;
    store.lookup = rows_per_second(lookups, o.repetitions, [&](const strings& keys) {
      std::vector<std::string_view> views(keys.begin(), keys.end());
      st.lookup(views, std::span<float>{out.data(), keys.size() * o.dim});
    });
    store.update = rows_per_second(updates, 1, [&](const strings& keys) {
      std::vector<std::string_view> views(keys.begin(), keys.end());
      st.update(views, std::span<const float>{grads.data(), keys.size() * o.dim}, 1);
    });
    report("memory_store", store);
  }

  runtime::system_config sys_cfg{"bench"};
  actors::register_actor_types(sys_cfg);
  caf::actor_system sys{sys_cfg};
  sys.await_actors_before_shutdown(false);
  auto timeout = std::chrono::minutes(5);

  // Runs the lookup and update streams through a master.
  auto bench_master = [&](const embedding_master_actor& master) -> caf::expected<path_result> {
    if (auto ok = runtime::ask<ok_atom>(sys, master, timeout, create_atom::value, cfg); !ok)
      return ok.error();
    caf::error failed;
    populate(o.keys, o.batch, [&](const strings& keys) {
      auto r =
        runtime::ask<std::vector<float>>(sys, master, timeout, lookup_atom::value, cfg.name, keys);
      if (!r)
        failed = r.error();
    });
    if (failed)
      return failed;
    path_result r;
    // The flat path, as ops calls it: the client hashes each key once, inside the timing.
    r.lookup = rows_per_second(lookups, o.repetitions, [&](const strings& keys) {
      std::vector<table_keys> request{{cfg.name, actors::hash_keys(keys)}};
      runtime::ask<lookup_reply>(sys, master, timeout, lookup_atom::value, std::move(request),
                                 false);
    });
    r.update = rows_per_second(updates, 1, [&](const strings& keys) {
      runtime::ask<ok_atom>(sys, master, timeout, update_atom::value, cfg.name, keys,
                            std::vector<float>(grads.begin(), grads.begin() + keys.size() * o.dim),
                            int64_t{1});
    });
    return r;
  };
  auto stop = [&](const std::vector<caf::actor>& actors) {
    caf::scoped_actor self{sys};
    for (auto& a : actors) {
      self->monitor(a);
      self->send_exit(a, caf::exit_reason::user_shutdown);
      self->receive([](const caf::down_msg&) {}, caf::after(std::chrono::seconds(30)) >> [] {});
    }
  };

  // The service with its shards in this process.
  path_result service;
  if (runs(o, "service")) {
    // As an in-process session starts it.
    actors::embedding_master_options opts{actors::spawn_shards(sys, o.shards)};
    opts.shards_may_lose_messages = false;
    auto shards = opts.shards;
    auto master = sys.spawn(actors::embedding_master, opts);
    auto r = bench_master(master);
    if (!r)
      return with_step("in-process service", r.error());
    service = *r;
    report("service (in-process)", service);
    std::vector<caf::actor> all{caf::actor_cast<caf::actor>(master)};
    for (auto& s : shards)
      all.push_back(caf::actor_cast<caf::actor>(s));
    stop(all);
  }

  // The direct path of a trainer in the shards' process (ops in an in-process session).
  path_result direct;
  if (runs(o, "direct")) {
    auto shards = actors::spawn_local_shards(sys, o.shards);
    auto master =
      sys.spawn(actors::embedding_master, actors::embedding_master_options{shards.actors});
    if (auto ok = runtime::ask<ok_atom>(sys, master, timeout, create_atom::value, cfg); !ok)
      return with_step("direct path", ok.error());
    actors::direct_embedding path{shards.tables};
    auto run = [&](const strings& keys, std::span<float> rows) {
      std::vector<table_keys> request{{cfg.name, actors::hash_keys(keys)}};
      return path.lookup(request, {rows});
    };
    populate(o.keys, o.batch, [&](const strings& keys) {
      std::vector<float> rows(keys.size() * o.dim);
      run(keys, rows);
    });
    direct.lookup = rows_per_second(lookups, o.repetitions, [&](const strings& keys) {
      run(keys, std::span<float>{out.data(), keys.size() * o.dim});
    });
    direct.update = rows_per_second(updates, 1, [&](const strings& keys) {
      auto route = run(keys, std::span<float>{out.data(), keys.size() * o.dim});
      if (route)
        path.update(**route, {std::span<const float>{grads.data(), keys.size() * o.dim}}, 1);
    });
    report("direct (in-process)", direct);
    std::vector<caf::actor> all{caf::actor_cast<caf::actor>(master)};
    for (auto& s : shards.actors)
      all.push_back(caf::actor_cast<caf::actor>(s));
    stop(all);
  }

  // The service with its shards in two other node processes.
  path_result remote;
  if (runs(o, "remote")) {
    auto nodes = start_node_pair("emb");
    if (!nodes)
      return with_step("starting node", nodes.error());
    std::vector<runtime::spawn_target> targets;
    for (auto* n : {&nodes->a, &nodes->b}) {
      auto agent = runtime::connect_agent(sys, n->address);
      if (!agent)
        return agent.error();
      targets.push_back({runtime::to_string(n->address), *agent});
    }
    auto shards = runtime::spawn_group<embedding_shard_actor>(
      sys, targets, timeout, actors::embedding_shard_state::name,
      [](size_t i) { return caf::make_message(static_cast<uint32_t>(i)); }, o.shards);
    if (!shards)
      return shards.error();
    auto master = sys.spawn(actors::embedding_master, actors::embedding_master_options{*shards});
    auto r = bench_master(master);
    if (!r)
      return with_step("remote service", r.error());
    remote = *r;
    report("service (2 nodes)", remote);
    stop({caf::actor_cast<caf::actor>(master)});
  }

  // LevelDB: a fresh store (cold cache), then the same stream again (warm cache).
  double leveldb_cold = 0, leveldb_warm = 0;
  if (runs(o, "leveldb")) {
    auto dir = std::filesystem::temp_directory_path() /
               ("darcy_bench_leveldb_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    auto ldb_cfg = cfg;
    ldb_cfg.backend = backend_kind::leveldb;
    ldb_cfg.path = dir.string();
    auto ldb_ids = zipf_stream(o.leveldb_keys, o.batches, o.batch, o.zipf);
    auto ldb_lookups = key_batches(ldb_ids);
    {
      auto writer = stores::leveldb_store::open(ldb_cfg);
      if (!writer)
        return writer.error();
      populate(o.leveldb_keys, o.batch, [&](const strings& keys) {
        std::vector<std::string_view> views(keys.begin(), keys.end());
        std::vector<float> rows(keys.size() * o.dim);
        (*writer)->lookup(views, rows);
      });
    }
    auto reader = stores::leveldb_store::open(ldb_cfg);
    if (!reader)
      return reader.error();
    auto run = [&](const strings& keys) {
      std::vector<std::string_view> views(keys.begin(), keys.end());
      (*reader)->lookup(views, std::span<float>{out.data(), keys.size() * o.dim});
    };
    leveldb_cold = rows_per_second(ldb_lookups, 1, run);
    leveldb_warm = rows_per_second(ldb_lookups, o.repetitions, run);
    report("leveldb cold", {leveldb_cold, 0});
    report("leveldb warm", {leveldb_warm, 0});
    reader->reset();
    std::filesystem::remove_all(dir);
  }

  // Update rules: Adagrad through a plugin against the built-in rule, in this run.
  rule_bench_result rules;
  if (runs(o, "rules")) {
    auto plugin = o.rule_plugin;
    if (plugin.empty())
      plugin = (std::filesystem::path{runtime::self_executable()}.parent_path() /
                "libdarcy_rule_bench_adagrad.so")
                 .string();
    auto r = run_rule_bench(plugin, updates, o.dim, o.repetitions);
    if (!r)
      return r.error();
    rules = *r;
  }

  std::ostringstream json;
  json << std::setprecision(6) << "{\"bench\":\"embedding\",\"metrics\":{"
       << "\"dense_rows_s\":" << dense_rows_s << ",\"store_lookup_rows_s\":" << store.lookup
       << ",\"service_lookup_rows_s\":" << service.lookup
       << ",\"direct_lookup_rows_s\":" << direct.lookup
       << ",\"remote_lookup_rows_s\":" << remote.lookup
       << ",\"store_update_rows_s\":" << store.update
       << ",\"service_update_rows_s\":" << service.update
       << ",\"direct_update_rows_s\":" << direct.update
       << ",\"remote_update_rows_s\":" << remote.update
       << ",\"store_vs_dense\":" << store.lookup / dense_rows_s
       << ",\"service_vs_dense\":" << service.lookup / dense_rows_s
       << ",\"direct_vs_dense\":" << direct.lookup / dense_rows_s
       << ",\"remote_vs_dense\":" << remote.lookup / dense_rows_s
       << ",\"bytes_per_row\":" << bytes_per_row << ",\"raw_bytes_per_row\":" << raw_bytes_per_row
       << ",\"builtin_rule_update_rows_s\":" << rules.builtin_update_rows_s
       << ",\"plugin_rule_update_rows_s\":" << rules.plugin_update_rows_s
       << ",\"rule_update_vs_builtin\":"
       << (rules.builtin_update_rows_s > 0
             ? rules.plugin_update_rows_s / rules.builtin_update_rows_s
             : 0.0)
       << ",\"adagrad_bytes_per_row\":" << rules.adagrad_bytes_per_row
       << ",\"rowwise_adagrad_bytes_per_row\":" << rules.rowwise_bytes_per_row
       << ",\"leveldb_cold_rows_s\":" << leveldb_cold << ",\"leveldb_warm_rows_s\":" << leveldb_warm
       << ",\"keys\":" << o.keys << ",\"leveldb_keys\":" << o.leveldb_keys << ",\"dim\":" << o.dim
       << ",\"cores\":" << std::thread::hardware_concurrency() << "}}";
  std::cout << json.str() << std::endl;
  return {};
}

} // namespace darcy::apps
