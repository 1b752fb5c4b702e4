#include "actors/serving/serving_shard.hpp"

#include "messages/error.hpp"
#include "runtime/log.hpp"
#include "stores/serving_export.hpp"

namespace darcy::actors {

namespace {

caf::result<shard_hits> topk(serving_shard_pointer self, const shard_query& q) {
  auto& st = self->state;
  if (expired(q.context)) {
    ++st.expired;
    return make_error(errc::deadline_exceeded, "shard " + std::to_string(st.config.shard) +
                                                 " received trace " + q.context.trace_id +
                                                 " after its deadline");
  }
  auto& index = *st.index;
  if (q.vector.size() != index.dim())
    return make_error(errc::dimension_mismatch, "query of " + std::to_string(q.vector.size()) +
                                                  " values for a model of dimension " +
                                                  std::to_string(index.dim()));
  shard_hits result;
  result.shard = st.config.shard;
  if (index.size() == 0)
    return result;
  compute::row_matrix query = Eigen::Map<const compute::row_matrix>(
    q.vector.data(), 1, static_cast<Eigen::Index>(q.vector.size()));
  auto k = std::min<size_t>(q.k, index.size());
  compute::mips::ivf_pq_search_options options;
  options.probes = st.config.probes;
  options.rerank = std::max<size_t>(st.config.rerank, k);
  auto hits = index.search(query, k, options);
  if (!hits)
    return make_error(hits.error());
  for (auto& h : hits->front()) {
    result.ids.push_back(h.id);
    result.scores.push_back(h.score);
  }
  ++st.answered;
  return result;
}

} // namespace

serving_shard_actor::behavior_type serving_shard(serving_shard_pointer self,
                                                 serving_shard_config config) {
  auto& st = self->state;
  st.config = config;
  auto manifest = stores::read_export_manifest(config.model_dir, config.version);
  caf::error failure;
  if (!manifest) {
    failure = std::move(manifest.error());
  } else {
    auto index = stores::load_export_shard(config.model_dir, *manifest, config.shard);
    if (index)
      st.index = std::make_shared<const compute::mips::ivf_pq_index>(std::move(*index));
    else
      failure = std::move(index.error());
  }
  if (failure) {
    runtime::log_warn("serving shard {} of {} version {} cannot load: {}", config.shard,
                      config.model, config.version, render(failure));
    self->quit(failure);
    return {
      [](topk_atom, const shard_query&) -> caf::result<shard_hits> {
        return make_error(errc::unavailable, "shard not loaded");
      },
      [](status_atom) -> caf::result<shard_status> {
        return make_error(errc::unavailable, "shard not loaded");
      },
    };
  }
  return {
    [=](topk_atom, const shard_query& q) { return topk(self, q); },
    [=](status_atom) {
      auto& s = self->state;
      return shard_status{s.config.model, s.config.version, s.config.shard, s.index->size(),
                          s.answered, s.expired};
    },
  };
}

} // namespace darcy::actors
