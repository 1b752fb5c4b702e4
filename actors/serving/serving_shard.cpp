#include "actors/serving/serving_shard.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "compute/finite.hpp"
#include "messages/error.hpp"
#include "runtime/log.hpp"
#include "stores/serving/serving_export.hpp"

namespace darcy::actors {

namespace {

// Why `q` is refused before any search, or an empty error.
caf::error refusal(serving_shard_state& st, const shard_query& q) {
  if (expired(q.context)) {
    ++st.expired;
    return make_error(errc::deadline_exceeded, "shard " + std::to_string(st.config.shard) +
                                                 " received trace " + q.context.trace_id +
                                                 " after its deadline");
  }
  if (q.vector.size() != st.index->dim())
    return make_error(errc::dimension_mismatch, "query of " + std::to_string(q.vector.size()) +
                                                  " values for a model of dimension " +
                                                  std::to_string(st.index->dim()));
  if (!compute::all_finite(q.vector))
    return make_error(errc::invalid_argument, "query holds a NaN or infinite value");
  return {};
}

// The k best items of each of `queries`, all admitted by refusal(), in one index call.
caf::expected<std::vector<shard_hits>> search(serving_shard_state& st,
                                              const std::vector<const shard_query*>& queries,
                                              uint32_t k) {
  std::vector<shard_hits> result(queries.size(), shard_hits{st.config.shard, {}, {}});
  auto& index = *st.index;
  if (index.size() == 0)
    return result;
  compute::row_matrix rows(static_cast<Eigen::Index>(queries.size()),
                           static_cast<Eigen::Index>(index.dim()));
  for (size_t r = 0; r < queries.size(); ++r)
    rows.row(static_cast<Eigen::Index>(r)) = Eigen::Map<const Eigen::RowVectorXf>(
      queries[r]->vector.data(), static_cast<Eigen::Index>(index.dim()));
  auto kept = std::min<size_t>(k, index.size());
  compute::mips::mips_search_options options;
  options.probes = st.config.probes;
  options.rerank = st.config.rerank;
  options.ef = st.config.ef;
  auto hits = index.search(rows, kept, options);
  if (!hits)
    return make_error(hits.error());
  for (size_t r = 0; r < queries.size(); ++r)
    for (auto& h : (*hits)[r]) {
      result[r].ids.push_back(h.id);
      result[r].scores.push_back(h.score);
    }
  st.answered += queries.size();
  return result;
}

caf::result<shard_hits> topk(serving_shard_pointer self, const shard_query& q) {
  auto& st = self->state;
  if (auto err = refusal(st, q))
    return err;
  auto hits = search(st, {&q}, q.k);
  if (!hits)
    return std::move(hits.error());
  return std::move(hits->front());
}

// Searches the batch's admitted queries together, one index call per distinct k.
shard_batch_hits topk_batch(serving_shard_pointer self, const shard_batch& batch) {
  auto& st = self->state;
  auto n = batch.queries.size();
  shard_batch_hits result{st.config.shard, std::vector<shard_hits>(n), std::vector<caf::error>(n)};
  std::map<uint32_t, std::vector<size_t>> by_k;
  for (size_t i = 0; i < n; ++i) {
    result.answers[i].shard = st.config.shard;
    if (auto err = refusal(st, batch.queries[i]))
      result.errors[i] = std::move(err);
    else
      by_k[batch.queries[i].k].push_back(i);
  }
  for (auto& [k, members] : by_k) {
    std::vector<const shard_query*> queries;
    for (auto i : members)
      queries.push_back(&batch.queries[i]);
    auto hits = search(st, queries, k);
    for (size_t j = 0; j < members.size(); ++j)
      if (hits)
        result.answers[members[j]] = std::move((*hits)[j]);
      else
        result.errors[members[j]] = hits.error();
  }
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
      st.index = std::make_shared<const compute::mips::mips_index>(std::move(*index));
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
      [](topk_atom, const shard_batch&) -> caf::result<shard_batch_hits> {
        return make_error(errc::unavailable, "shard not loaded");
      },
      [](status_atom) -> caf::result<shard_status> {
        return make_error(errc::unavailable, "shard not loaded");
      },
    };
  }
  return {
    [=](topk_atom, const shard_query& q) { return topk(self, q); },
    [=](topk_atom, const shard_batch& batch) { return topk_batch(self, batch); },
    [=](status_atom) {
      auto& s = self->state;
      return shard_status{s.config.model,  s.config.version, s.config.shard,
                          s.index->size(), s.answered,       s.expired};
    },
  };
}

} // namespace darcy::actors
