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

// Scores the live index exactly against `rows` (one query a row) and keeps the k best of each
// query's hits and those, best first.
void merge_added(const serving_shard_state& st, const compute::row_matrix& rows, uint32_t k,
                 std::vector<std::vector<compute::hit>>& hits) {
  auto dim = static_cast<Eigen::Index>(st.index->dim());
  Eigen::Map<const compute::row_matrix> added(st.added.data(),
                                              static_cast<Eigen::Index>(st.added_ids.size()), dim);
  compute::row_matrix scores = rows * added.transpose();
  for (size_t r = 0; r < hits.size(); ++r) {
    auto& h = hits[r];
    for (size_t a = 0; a < st.added_ids.size(); ++a)
      h.push_back(
        {scores(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(a)), st.added_ids[a]});
    std::stable_sort(h.begin(), h.end(), [](const compute::hit& x, const compute::hit& y) {
      return x.score > y.score;
    });
    if (h.size() > k)
      h.resize(k);
  }
}

caf::result<ok_atom> add_items(serving_shard_pointer self, const shard_items& items) {
  auto& st = self->state;
  auto dim = st.index->dim();
  if (items.vectors.size() != items.ids.size() * dim)
    return make_error(errc::dimension_mismatch, std::to_string(items.vectors.size()) +
                                                  " values for " +
                                                  std::to_string(items.ids.size()) +
                                                  " items of dimension " + std::to_string(dim));
  if (!compute::all_finite(items.vectors))
    return make_error(errc::invalid_argument, "an added item holds a NaN or infinite value");
  for (size_t i = 0; i < items.ids.size(); ++i) {
    if (!st.added_set.insert(items.ids[i]).second)
      continue;
    st.added_ids.push_back(items.ids[i]);
    st.added.insert(st.added.end(), items.vectors.begin() + static_cast<std::ptrdiff_t>(i * dim),
                    items.vectors.begin() + static_cast<std::ptrdiff_t>((i + 1) * dim));
  }
  return ok_atom::value;
}

// The k best items of each of `queries`, all admitted by refusal(), in one index call.
caf::expected<std::vector<shard_hits>> search(serving_shard_state& st,
                                              const std::vector<const shard_query*>& queries,
                                              uint32_t k) {
  std::vector<shard_hits> result(queries.size(), shard_hits{st.config.shard, {}, {}});
  auto& index = *st.index;
  if (index.size() == 0 && st.added_ids.empty())
    return result;
  compute::row_matrix rows(static_cast<Eigen::Index>(queries.size()),
                           static_cast<Eigen::Index>(index.dim()));
  for (size_t r = 0; r < queries.size(); ++r)
    rows.row(static_cast<Eigen::Index>(r)) = Eigen::Map<const Eigen::RowVectorXf>(
      queries[r]->vector.data(), static_cast<Eigen::Index>(index.dim()));
  std::vector<std::vector<compute::hit>> hits(queries.size());
  if (index.size() > 0) {
    compute::mips::mips_search_options options;
    options.probes = st.config.probes;
    options.rerank = st.config.rerank;
    options.ef = st.config.ef;
    auto found = index.search(rows, std::min<size_t>(k, index.size()), options);
    if (!found)
      return make_error(found.error());
    hits = std::move(*found);
  }
  if (!st.added_ids.empty())
    merge_added(st, rows, k, hits);
  for (size_t r = 0; r < queries.size(); ++r)
    for (auto& h : hits[r]) {
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
      [](add_atom, const shard_items&) -> caf::result<ok_atom> {
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
    [=](add_atom, const shard_items& items) { return add_items(self, items); },
    [=](status_atom) {
      auto& s = self->state;
      return shard_status{s.config.model, s.config.version,
                          s.config.shard, s.index->size() + s.added_ids.size(),
                          s.answered,     s.expired};
    },
  };
}

} // namespace darcy::actors
