#include "apps/wals/export_job.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "apps/wals/model_io.hpp"
#include "runtime/cluster/chaos.hpp"
#include "stores/serving/serving_export.hpp"

namespace darcy::wals {

namespace {

// The first `rows` rows of `m` (the matrix's own; later rows are feature rows).
compute::row_matrix head_rows(const stores::float_matrix& m, uint64_t rows) {
  return Eigen::Map<const compute::row_matrix>(m.values.data(), static_cast<Eigen::Index>(rows),
                                               static_cast<Eigen::Index>(m.cols));
}

std::vector<std::string> head_names(const std::vector<std::string>& ids, uint64_t rows) {
  if (ids.size() < rows)
    return {};
  return {ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(rows)};
}

// The rows of `m` past the first `own` (its features), and their names without the
// "feature:" that stores/data gives them.
void tail_rows(const stores::float_matrix& m, const std::vector<std::string>& ids, uint64_t own,
               compute::row_matrix& factors, std::vector<std::string>& names) {
  if (m.rows <= own || ids.size() != m.rows)
    return;
  factors = Eigen::Map<const compute::row_matrix>(m.values.data() + own * m.cols,
                                                  static_cast<Eigen::Index>(m.rows - own),
                                                  static_cast<Eigen::Index>(m.cols));
  constexpr std::string_view prefix = "feature:";
  for (auto i = own; i < m.rows; ++i)
    names.push_back(ids[i].starts_with(prefix) ? ids[i].substr(prefix.size()) : ids[i]);
}

} // namespace

caf::error run_export(const export_job& job) {
  auto start = std::chrono::steady_clock::now();
  auto m = load_model(job.model);
  if (!m)
    return std::move(m.error());
  stores::export_input in;
  in.config.kind = "wals";
  in.config.metric = "dot";
  in.config.shards = job.shards;
  in.config.lambda = m->params.lambda;
  in.config.sigma = m->params.sigma;
  in.config.alpha = m->params.alpha;
  in.config.weight = to_string(m->params.weight_fn);
  in.items = head_rows(m->v, m->items);
  in.users = head_rows(m->u, m->users);
  in.item_names = head_names(m->col_ids, m->items);
  in.user_names = head_names(m->row_ids, m->users);
  in.config.feature_value = m->feature_value;
  tail_rows(m->v, m->col_ids, m->items, in.user_features, in.user_feature_names);
  tail_rows(m->u, m->row_ids, m->users, in.item_features, in.item_feature_names);
  in.index = job.index;
  in.config.index = job.kind;
  in.graph = job.graph;
  in.graph.threads = job.index.threads;
  if (!job.stall_before_commit.empty())
    in.before_commit = [path = job.stall_before_commit] {
      runtime::write_fault_pid(path);
      for (;;)
        ::pause();
    };
  auto version = stores::write_export(job.out, std::move(in), job.keep);
  if (!version)
    return std::move(version.error());
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
    "exported %s as version %s of %s (%u shards, %llu items, %llu user and %llu item "
    "features) in %.1f s\n",
    job.model.c_str(), version->c_str(), job.out.c_str(), job.shards,
    static_cast<unsigned long long>(m->items),
    static_cast<unsigned long long>(m->v.rows - m->items),
    static_cast<unsigned long long>(m->u.rows - m->users), seconds);
  return {};
}

} // namespace darcy::wals
