#include "apps/word2vec/export_job.hpp"

#include <chrono>
#include <cstdio>

#include "messages/error.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/checkpoint/checkpoint_io.hpp"
#include "stores/embedding/embedding_part.hpp"
#include "stores/serving/serving_export.hpp"

namespace darcy::word2vec {

caf::expected<word_vectors> read_checkpoint_vectors(const std::string& checkpoint,
                                                    const std::string& name) {
  auto manifest = stores::checkpoint_dir{checkpoint}.read_manifest();
  if (!manifest)
    return std::move(manifest.error());
  auto table = name + ".in";
  for (auto& embedding : manifest->embeddings) {
    if (embedding.config.name != table)
      continue;
    word_vectors result;
    std::vector<float> values;
    auto dim = embedding.config.dim;
    for (auto& file : embedding.files) {
      auto err = stores::read_shard_file(
        checkpoint, file, embedding.config, [&](const stores::row_record& row) -> caf::error {
          if (row.values.size() != dim)
            return make_error(errc::corrupt_file,
                              file.path + ": a row of " + std::to_string(row.values.size()) +
                                " values in a table of dim " + std::to_string(dim));
          result.words.emplace_back(row.key);
          values.insert(values.end(), row.values.begin(), row.values.end());
          return {};
        });
      if (err)
        return err;
    }
    result.vectors = Eigen::Map<const compute::row_matrix>(
      values.data(), static_cast<Eigen::Index>(result.words.size()),
      static_cast<Eigen::Index>(dim));
    return result;
  }
  return make_error(errc::not_found, "the checkpoint " + checkpoint + " has no embedding " + table);
}

caf::error run_export(const export_job& job) {
  if (job.checkpoint.empty() == job.vectors.empty())
    return make_error(errc::invalid_argument, "give exactly one of --checkpoint and --vectors");
  auto start = std::chrono::steady_clock::now();
  auto source = job.vectors.empty() ? job.checkpoint : job.vectors;
  auto v = job.vectors.empty() ? read_checkpoint_vectors(job.checkpoint, job.name)
                               : read_vectors(job.vectors);
  if (!v)
    return std::move(v.error());
  if (v->words.empty())
    return make_error(errc::invalid_argument, source + " holds no word vectors");
  stores::export_input in;
  in.config.kind = "word2vec";
  in.config.metric = "cosine";
  in.config.shards = job.shards;
  auto words = v->words.size();
  in.items = std::move(v->vectors);
  in.item_names = std::move(v->words);
  in.index = job.index;
  in.config.index = job.kind;
  in.graph = job.graph;
  in.graph.threads = job.index.threads;
  auto version = stores::write_export(job.out, std::move(in), job.keep);
  if (!version)
    return std::move(version.error());
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("exported %s as version %s of %s (%u shards, %zu words, cosine) in %.1f s\n",
              source.c_str(), version->c_str(), job.out.c_str(), job.shards, words, seconds);
  return {};
}

} // namespace darcy::word2vec
