#include "tests/support/checkpoint_drill.hpp"

#include <random>

#include "actors/embedding/embedding_master.hpp"
#include "actors/embedding/embedding_shard.hpp"
#include "runtime/ask.hpp"

namespace darcy::test {

namespace {

constexpr auto timeout = std::chrono::seconds(60);

std::string key(int i) {
  return "k" + std::to_string(i);
}

} // namespace

embedding_master_actor start_drill_service(caf::actor_system& sys, size_t shards) {
  actors::embedding_master_options opts;
  opts.shards = actors::spawn_shards(sys, shards);
  return sys.spawn(actors::embedding_master, opts);
}

caf::error drill_setup(caf::actor_system& sys, const embedding_master_actor& master, int rows) {
  de_config cfg;
  cfg.name = drill_table;
  cfg.dim = drill_dim;
  cfg.optimizer = {optimizer_kind::adagrad, 0.1f};
  if (auto ok = runtime::ask<ok_atom>(sys, master, timeout, create_atom::value, cfg); !ok)
    return ok.error();
  for (int start = 0; start < rows; start += 4096) {
    std::vector<std::string> keys;
    for (int i = start; i < std::min(rows, start + 4096); ++i)
      keys.push_back(key(i));
    auto r = runtime::ask<std::vector<float>>(sys, master, timeout, lookup_atom::value,
                                              std::string{drill_table}, keys);
    if (!r)
      return r.error();
  }
  return {};
}

caf::error drill_step(caf::actor_system& sys, const embedding_master_actor& master, int step) {
  std::mt19937 rng{static_cast<unsigned>(step)};
  std::uniform_int_distribution<int> pick{0, 999};
  std::normal_distribution<float> noise{0, 0.2f};
  std::vector<std::string> keys;
  for (int k = 0; k < 256; ++k)
    keys.push_back(key(pick(rng)));
  std::vector<float> grads(keys.size() * drill_dim);
  for (auto& g : grads)
    g = noise(rng);
  auto ok = runtime::ask<ok_atom>(sys, master, timeout, update_atom::value,
                                  std::string{drill_table}, keys, grads, int64_t{step});
  return ok ? caf::error{} : ok.error();
}

caf::expected<std::vector<float>> drill_probe(caf::actor_system& sys,
                                              const embedding_master_actor& master) {
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; i += 7)
    keys.push_back(key(i));
  return runtime::ask<std::vector<float>>(sys, master, timeout, lookup_atom::value,
                                          std::string{drill_table}, keys);
}

} // namespace darcy::test
