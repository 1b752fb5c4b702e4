#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "apps/bench/online_cluster_state.hpp"
#include "ops/estimator/export/export.hpp"

namespace darcy::apps::online {

namespace {

namespace est = ops::estimator;

/// Freshness as the one-process bench takes it, from the chief's sync times: the steps each
/// sync holds ended between the previous sync's cut and its own (spread evenly there, at most 32
/// a sync), and each counts until the first answer served from that sync or a later one.
std::vector<double> freshness_s(const std::vector<sync_line>& syncs,
                                const std::vector<std::pair<steady::time_point, int64_t>>& answers,
                                steady::time_point started) {
  std::vector<double> out;
  for (size_t i = 1; i < syncs.size(); ++i) {
    auto& prev = syncs[i - 1];
    auto& s = syncs[i];
    if (s.cut < started || s.step <= prev.step)
      continue;
    auto served = std::find_if(answers.begin(), answers.end(),
                               [&](auto& a) { return a.first >= s.cut && a.second >= s.step; });
    if (served == answers.end())
      continue;
    auto steps = std::min<int64_t>(s.step - prev.step, 32);
    for (int64_t k = 1; k <= steps; ++k) {
      auto ended = prev.cut + (s.cut - prev.cut) * k / steps;
      out.push_back(std::chrono::duration<double>(served->first - ended).count());
    }
  }
  return out;
}

/// The served scores against the frozen export's on the same rows, pooled per minute of the
/// client's run: {"served", "frozen", "lift"} a minute, and the mean lift over the minutes.
nlohmann::json auc_by_minute(const std::vector<std::shared_ptr<pool>>& pools,
                             est::exported_model& frozen, steady::time_point started, double& lift,
                             double& served_auc, double& frozen_auc) {
  struct minute {
    std::vector<double> served, frozen, labels;
  };
  std::map<size_t, minute> minutes;
  for (auto& p : pools) {
    if (p->served.empty())
      continue;
    std::vector<size_t> all(p->table->rows());
    std::iota(all.begin(), all.end(), size_t{0});
    auto scores = frozen.predict(est::gather(*p->table, all));
    if (!scores)
      continue;
    for (auto& a : p->served) {
      auto& m = minutes[size_t(std::chrono::duration<double>(a.answered - started).count() / 60)];
      m.served.push_back(a.score);
      m.frozen.push_back((*scores)(Eigen::Index(a.row), 0));
      m.labels.push_back(p->table->labels(Eigen::Index(a.row), 0));
    }
  }
  auto timeline = nlohmann::json::array();
  double lift_sum = 0, served_sum = 0, frozen_sum = 0;
  size_t counted = 0, most = 0;
  for (auto& [i, m] : minutes)
    most = std::max(most, m.served.size());
  for (auto& [i, m] : minutes) {
    auto served = auc_of(m.served, m.labels), held = auc_of(m.frozen, m.labels);
    // The last minute's few seconds, in the timeline only.
    if (std::isfinite(served) && std::isfinite(held) && m.served.size() * 10 >= most) {
      lift_sum += served - held;
      served_sum += served;
      frozen_sum += held;
      ++counted;
    }
    timeline.push_back({{"minute", i + 1},
                        {"served_auc", number(served)},
                        {"frozen_auc", number(held)},
                        {"rows_asked", m.served.size()}});
  }
  auto mean = [&](double sum) { return counted ? sum / double(counted) : std::nan(""); };
  lift = mean(lift_sum);
  served_auc = mean(served_sum);
  frozen_auc = mean(frozen_sum);
  return timeline;
}

} // namespace

caf::error report_cluster_run(const online_bench_options& o, const std::string& dir,
                              const cluster_state& st, steady::time_point started,
                              steady::time_point finished, double local_examples_per_s) {
  auto frozen = est::exported_model::load(dir + "/serving/" + served_model);
  if (!frozen)
    return std::move(frozen.error());
  double lift = 0, served_auc = 0, frozen_auc = 0;
  auto timeline = auc_by_minute(st.pools, **frozen, started, lift, served_auc, frozen_auc);
  // Pushes answered 200, for the latencies during syncs; the bytes of deltas over a whole
  // snapshot then: the bytes a row of the last full sync took, times the rows.
  std::vector<std::pair<steady::time_point, steady::time_point>> pushes;
  double wire_delta = 0, wire_full = 0, bytes_per_row = 0;
  uint64_t full_syncs = 0, whole_chain_pushes = 0;
  const sync_line* first = nullptr;
  const sync_line* last = nullptr;
  for (auto& s : st.syncs) {
    if (s.full) {
      ++full_syncs;
      bytes_per_row = double(s.bytes) / double(std::max<uint64_t>(s.rows, 1));
    }
    if (s.cut >= started && s.cut <= finished) {
      first = first ? first : &s;
      last = &s;
    }
    if (s.status != 200 || !s.push)
      continue;
    pushes.push_back(*s.push);
    if (s.whole_chain)
      ++whole_chain_pushes;
    else if (bytes_per_row > 0) {
      wire_delta += double(s.push_bytes);
      wire_full += bytes_per_row * double(s.rows);
    }
  }
  {
    // Each whole answer's second of the run and sync step, for a look beyond the figures.
    std::ofstream out{dir + "/answers.tsv"};
    for (auto& [at, step] : st.answer_steps)
      out << std::chrono::duration<double>(at - started).count() << '\t' << step << '\n';
  }
  auto latency = split_by_syncs(st.answers, pushes);
  auto fresh = freshness_s(st.syncs, st.answer_steps, started);
  double cluster_rate = std::nan("");
  if (first && last && last->cut > first->cut)
    cluster_rate = double(last->step - first->step) * double(o.batch) /
                   std::chrono::duration<double>(last->cut - first->cut).count();
  auto all = latency.during_ms;
  all.insert(all.end(), latency.without_ms.begin(), latency.without_ms.end());
  auto p99_during = percentile(latency.during_ms, 0.99);
  auto p99_without = percentile(latency.without_ms, 0.99);
  // The tables' rows at the last sync, at the bytes a row took in the last full sync (its key,
  // values and optimizer slots), over the memory tiers' budgets of the ps together.
  auto stored = st.syncs.empty() ? 0.0 : bytes_per_row * double(st.syncs.back().rows);
  auto budget = double(o.memory_budget) * double(parameter_servers);
  nlohmann::json metrics{
    {"freshness_p50_s", number(percentile(fresh, 0.5))},
    {"freshness_p99_s", number(percentile(fresh, 0.99))},
    {"online_auc_lift", number(lift)},
    {"wire_delta_vs_full_bytes", number(wire_full > 0 ? wire_delta / wire_full : std::nan(""))},
    {"failed_requests", latency.failed},
    {"p99_sync_ratio", number(p99_during / p99_without)},
    {"stored_vs_budget", number(stored / budget)},
    {"cluster_online_examples_per_s", number(cluster_rate)},
    {"cluster_online_vs_local", number(cluster_rate / local_examples_per_s)},
    {"local_online_examples_per_s", local_examples_per_s},
    {"freshness_samples", fresh.size()},
    {"served_auc", number(served_auc)},
    {"frozen_auc", number(frozen_auc)},
    {"frozen_at_step", st.exported_at},
    {"requests", st.answers.size()},
    {"requests_during_syncs", latency.during_ms.size()},
    {"requests_during_restore", latency.during_restore},
    {"p99_ms_during_syncs", number(p99_during)},
    {"p99_ms_without_syncs", number(p99_without)},
    {"p50_ms", number(percentile(all, 0.5))},
    {"stored_bytes", stored},
    {"embedding_rows", st.syncs.empty() ? 0 : st.syncs.back().rows},
    {"memory_budget_bytes_per_ps", o.memory_budget},
    {"syncs", st.syncs.size()},
    {"full_syncs", full_syncs},
    {"whole_chain_pushes", whole_chain_pushes},
    {"global_step", st.syncs.empty() ? 0 : st.syncs.back().step},
    {"sync_every_s", std::chrono::duration<double>(o.sync_every).count()},
    {"online_seconds", std::chrono::duration<double>(finished - started).count()},
    {"killed", "serving node s" + std::to_string(serving_nodes - 1) + " at half time"},
    {"replicas", serving_replicas},
    {"replicas_serving_at_end", st.replicas_serving_at_end}};
  std::cout << nlohmann::json{{"bench", "online"},
                              {"mode", "cluster"},
                              {"metrics", metrics},
                              {"timeline", timeline}}
                 .dump()
            << std::endl;
  return {};
}

} // namespace darcy::apps::online
