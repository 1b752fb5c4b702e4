#include "apps/bench/rule_bench.hpp"

#include <algorithm>
#include <iostream>

#include "messages/error.hpp"
#include "ops/load_plugin.hpp"
#include "stores/embedding/memory_store.hpp"

namespace darcy::apps {

namespace {

caf::expected<std::unique_ptr<stores::memory_store>> store_of(const std::string& rule,
                                                              uint32_t dim) {
  stores::memory_store_options opts;
  opts.dim = dim;
  opts.optimizer.rule = rule;
  opts.optimizer.params = {{"learning_rate", 0.05f}};
  return stores::memory_store::make(opts);
}

} // namespace

caf::expected<rule_bench_result> run_rule_bench(const std::string& plugin,
                                                const std::vector<key_strings>& updates,
                                                uint32_t dim, uint32_t repetitions) {
  if (auto names = ops::load_plugin(plugin); !names)
    return std::move(names.error());
  rule_bench_result r;
  size_t widest = 0;
  for (auto& b : updates)
    widest = std::max(widest, b.size());
  constexpr uint32_t bytes_dim = 16;
  // The bytes a row are measured on rows enough that the stores' 2 MiB chunks and their
  // index's growth steps are a small share of them, whatever the update batches' size.
  constexpr size_t bytes_rows = 200'000;
  key_strings bytes_keys;
  for (size_t k = 0; k < bytes_rows; ++k)
    bytes_keys.push_back("row" + std::to_string(k));
  const std::vector<key_strings> bytes_batches{bytes_keys};
  std::vector<float> grads(widest * dim, 0.01f);
  std::vector<float> out(std::max(widest * dim, bytes_rows * bytes_dim));
  std::vector<std::unique_ptr<stores::memory_store>> stores;
  for (auto [rule, d] :
       {std::pair{"adagrad", dim}, std::pair{"plugin_adagrad", dim},
        std::pair{"adagrad", bytes_dim}, std::pair{"rowwise_adagrad", bytes_dim}}) {
    auto s = store_of(rule, d);
    if (!s)
      return std::move(s.error());
    // Every row created first: the passes update rows that exist.
    for (auto& b : d == bytes_dim && stores.size() >= 2 ? bytes_batches : updates) {
      std::vector<std::string_view> views(b.begin(), b.end());
      (*s)->lookup(views, std::span<float>{out.data(), b.size() * d});
    }
    stores.push_back(std::move(*s));
  }
  auto pass = [&](stores::memory_store& st) {
    return rows_per_second(updates, 1, [&](const key_strings& keys) {
      std::vector<std::string_view> views(keys.begin(), keys.end());
      st.update(views, std::span<const float>{grads.data(), keys.size() * dim}, 1);
    });
  };
  std::vector<double> builtin, plugged;
  for (uint32_t i = 0; i < std::max(1u, repetitions); ++i) {
    builtin.push_back(pass(*stores[0]));
    plugged.push_back(pass(*stores[1]));
  }
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  r.builtin_update_rows_s = median(builtin);
  r.plugin_update_rows_s = median(plugged);
  auto per_row = [](const stores::memory_store& st) {
    auto s = st.stats();
    return static_cast<double>(s.bytes) / static_cast<double>(std::max<uint64_t>(1, s.rows));
  };
  r.adagrad_bytes_per_row = per_row(*stores[2]);
  r.rowwise_bytes_per_row = per_row(*stores[3]);
  std::cout << "rules at dim " << dim << ": Adagrad built in " << r.builtin_update_rows_s
            << " updates/s, through a plugin " << r.plugin_update_rows_s << "; at dim " << bytes_dim
            << " a row costs " << r.adagrad_bytes_per_row << " bytes with Adagrad, "
            << r.rowwise_bytes_per_row << " with row-wise Adagrad" << std::endl;
  return r;
}

} // namespace darcy::apps
