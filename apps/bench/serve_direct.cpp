#include "apps/bench/serve_direct.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "compute/mips/exact_index.hpp"
#include "messages/error.hpp"
#include "stores/serving/serving_export.hpp"

namespace darcy::apps {

caf::error run_serve_direct(const serve_direct_options& o) {
  auto manifest = stores::read_export_manifest(o.model_dir);
  if (!manifest)
    return manifest.error();
  auto root = stores::load_export_root(o.model_dir, *manifest);
  if (!root)
    return root.error();
  auto& c = root->config;
  if (c.users == 0)
    return make_error(errc::not_found, o.model_dir + ": the export holds no users to query with");
  std::vector<compute::mips::mips_index> shards;
  for (uint32_t s = 0; s < c.shards; ++s) {
    auto shard = stores::load_export_shard(o.model_dir, *manifest, s);
    if (!shard)
      return shard.error();
    shards.push_back(std::move(*shard));
  }
  compute::mips::mips_search_options search;
  search.probes = o.probes;
  search.rerank = o.rerank;
  search.ef = o.ef;
  // The merged answer of every shard to `query`.
  auto answer = [&](const compute::row_matrix& query) {
    std::vector<std::vector<compute::hit>> lists;
    for (auto& shard : shards) {
      auto hits = shard.search(query, std::min<size_t>(o.k, shard.size()), search);
      if (hits)
        lists.push_back(std::move(hits->front()));
    }
    return compute::merge_top_k(lists, o.k);
  };
  // Recall@k of the first users (at most 500) against an exact search of the root's items.
  auto recall_users = std::min<uint64_t>(c.users, 500);
  compute::row_matrix sample(static_cast<Eigen::Index>(recall_users), c.dim);
  std::copy_n(root->users.data(), recall_users * c.dim, sample.data());
  auto exact =
    compute::mips::exact_index::make(compute::row_matrix{Eigen::Map<const compute::row_matrix>(
      root->items.data(), static_cast<Eigen::Index>(c.items), c.dim)});
  if (!exact)
    return make_error(exact.error());
  auto truth = exact->search(sample, std::min<size_t>(o.k, c.items));
  if (!truth)
    return make_error(truth.error());
  std::vector<std::vector<compute::hit>> found;
  for (Eigen::Index u = 0; u < sample.rows(); ++u)
    found.push_back(answer(sample.row(u)));
  auto recall = compute::recall_at(*truth, found);
  std::atomic<uint64_t> answered{0};
  std::atomic<bool> stop{false};
  auto worker = [&](uint64_t seed) {
    std::mt19937_64 rng{seed};
    std::uniform_int_distribution<uint64_t> pick(0, c.users - 1);
    compute::row_matrix query(1, c.dim);
    while (!stop.load(std::memory_order_relaxed)) {
      auto user = pick(rng);
      std::copy_n(root->users.data() + user * c.dim, c.dim, query.data());
      if (answer(query).size() == o.k)
        answered.fetch_add(1, std::memory_order_relaxed);
    }
  };
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < o.threads; ++t)
    threads.emplace_back(worker, o.seed + t);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  for (auto& t : threads)
    t.join();
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto qps = static_cast<double>(answered.load()) / seconds;
  std::printf(
    "{\"bench\":\"serve_direct\",\"metrics\":{\"direct_qps\":%.1f,\"direct_recall_at_k\":%.4f,"
    "\"threads\":%u,"
    "\"shards\":%u,\"items\":%llu,\"index\":\"%s\",\"probes\":%u,\"rerank\":%u,\"ef\":%u}}\n",
    qps, recall, o.threads, c.shards, static_cast<unsigned long long>(c.items),
    compute::mips::to_string(c.index), o.probes, o.rerank, o.ef);
  return {};
}

} // namespace darcy::apps
