#include "apps/wals/wals_jobs.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "apps/progress/progress_bar.hpp"
#include "apps/wals/model_io.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/cluster_file.hpp"
#include "runtime/host_port.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::wals {

namespace {

using clock = std::chrono::steady_clock;

double since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

caf::expected<std::unique_ptr<ops::session>> open_session(const train_job& job) {
  ops::session_options o;
  o.name = "wals-driver";
  o.timeout = std::chrono::milliseconds(job.timeout_ms);
  if (!job.cluster.empty()) {
    auto seed = runtime::resolve_seed(job.cluster);
    if (!seed)
      return std::move(seed.error());
    o.seed = *seed;
  }
  return ops::session::open(o);
}

std::map<std::string, std::string> read_names(const std::string& path) {
  std::map<std::string, std::string> names;
  std::ifstream in{path};
  std::string line;
  while (std::getline(in, line)) {
    auto tab = line.find('\t');
    if (tab == std::string::npos)
      continue;
    auto end = line.find('\t', tab + 1);
    names[line.substr(0, tab)] =
      line.substr(tab + 1, end == std::string::npos ? end : end - tab - 1);
  }
  return names;
}

} // namespace

caf::expected<trained> train(const train_job& job) {
  trained t;
  auto start = clock::now();
  auto data = stores::load_dataset(job.options.data, 2);
  if (!data)
    return std::move(data.error());
  if (data->skipped_lines > 0)
    std::cerr << "skipped " << data->skipped_lines << " malformed lines\n";
  t.data = std::make_shared<const stores::wals_dataset>(std::move(*data));
  t.load_seconds = since(start);
  auto opts = job.options;
  if (opts.checkpoint_dir.empty() && !job.out.empty())
    opts.checkpoint_dir = job.out + "/checkpoints";
  // Refuse a directory the run could not write before training, not after.
  for (auto [flag, dir] : {std::pair{"--out", job.out}, {"--checkpoint", opts.checkpoint_dir}})
    if (!dir.empty())
      if (auto err = stores::checkpoint_dir{dir}.prepare())
        return make_error(errc::io_error, std::string{flag} + ": " + context_of(err));
  auto s = open_session(job);
  if (!s)
    return std::move(s.error());
  auto bar = std::make_shared<apps::progress_bar>(apps::progress_bar::on_stderr());
  auto train_start = clock::now();
  if (!job.quiet) {
    auto solved = std::make_shared<uint64_t>(0);
    opts.on_progress = [bar, train_start, solved, sweeps = opts.sweeps](const wals_progress& p) {
      double fraction = (2.0 * p.sweep + static_cast<double>(p.side) + 1) / (2.0 * sweeps);
      double elapsed = since(train_start);
      *solved += p.rows;
      char loss[64] = "";
      if (p.side == wals_side::cols)
        std::snprintf(loss, sizeof(loss), "  loss %.6g", p.loss);
      bar->update(std::min(fraction, 1.0),
                  "sweep " + std::to_string(p.sweep + 1) + "/" + std::to_string(sweeps) + " " +
                    to_string(p.side) + loss + "  " +
                    apps::format_rate(static_cast<double>(*solved) / std::max(elapsed, 1e-9)) +
                    " rows/s",
                  elapsed / std::max(fraction, 1e-9) - elapsed);
    };
    opts.on_chief_restart = [](const std::string& node) {
      std::cerr << "\nwals: chief restarted on node " << node << " from the last checkpoint\n";
    };
  }
  auto result = ops::train_wals(**s, opts, t.data);
  if (!job.quiet)
    bar->finish();
  if (!result)
    return std::move(result.error());
  t.result = std::move(*result);
  t.train_seconds = since(train_start);
  if (!job.out.empty()) {
    model m;
    m.params = job.options.params;
    m.users = t.data->users;
    m.items = t.data->items;
    m.row_ids = t.data->row_ids;
    m.col_ids = t.data->col_ids;
    m.feature_value = job.options.data.feature_value;
    m.u = t.result.u;
    m.v = t.result.v;
    m.losses = t.result.losses;
    if (t.data->matrix.nnz() <= 20'000'000)
      m.seen = t.data->matrix;
    if (auto err = save_model(job.out, m))
      return err;
  }
  return t;
}

caf::error run_train(const train_job& job) {
  auto t = train(job);
  if (!t)
    return std::move(t.error());
  auto& r = t->result;
  std::cout << "trained " << t->data->matrix.rows << " x " << t->data->matrix.cols << " ("
            << t->data->matrix.nnz() << " entries) in " << t->train_seconds << " s with "
            << r.workers << " workers and " << r.shards << " factor shards";
  if (r.chief_restarts > 0)
    std::cout << ", chief restarted " << r.chief_restarts << " time(s)";
  std::cout << "\nloss per sweep:";
  for (auto l : r.losses)
    std::cout << ' ' << l;
  std::cout << '\n';
  if (!job.out.empty())
    std::cout << "model written to " << job.out << '\n';
  return {};
}

caf::expected<eval_figures> evaluate(train_job job, uint32_t k) {
  if (job.options.data.holdout <= 0)
    job.options.data.holdout = 0.2f;
  auto t = train(job);
  if (!t)
    return std::move(t.error());
  auto& d = *t->data;
  compute::holdout_split split{d.observed, d.held_out};
  eval_figures f;
  auto dim = job.options.params.dim;
  f.wals =
    compute::evaluate_factors(split, {t->result.u.values.data(), t->result.u.rows, dim},
                              {t->result.v.values.data(), t->result.v.rows, dim}, d.items, k);
  f.popularity = compute::evaluate_popularity(split, d.items, k);
  f.train_seconds = t->train_seconds;
  return f;
}

caf::error run_eval(const eval_job& job) {
  auto f = evaluate(job.train, job.k);
  if (!f)
    return std::move(f.error());
  auto k = std::to_string(job.k);
  std::printf("%-12s %10s %10s %10s %10s   (%llu users with held-out items)\n", "model",
              ("P@" + k).c_str(), ("R@" + k).c_str(), ("MAP@" + k).c_str(), ("NDCG@" + k).c_str(),
              static_cast<unsigned long long>(f->wals.rows));
  for (auto [name, m] : {std::pair{"wals", f->wals}, std::pair{"popularity", f->popularity}})
    std::printf("%-12s %10.4f %10.4f %10.4f %10.4f\n", name, m.precision, m.recall, m.map, m.ndcg);
  if (job.json)
    std::printf(
      "{\"eval\":\"wals\",\"k\":%u,\"p\":%.6f,\"r\":%.6f,\"map\":%.6f,\"ndcg\":%.6f,"
      "\"pop_p\":%.6f,\"pop_r\":%.6f,\"pop_map\":%.6f,\"pop_ndcg\":%.6f,"
      "\"train_s\":%.3f}\n",
      job.k, f->wals.precision, f->wals.recall, f->wals.map, f->wals.ndcg, f->popularity.precision,
      f->popularity.recall, f->popularity.map, f->popularity.ndcg, f->train_seconds);
  return {};
}

caf::error run_recommend(const recommend_job& job) {
  auto m = load_model(job.model);
  if (!m)
    return std::move(m.error());
  auto dim = m->params.dim;
  compute::factor_view v{m->v.values.data(), m->v.rows, dim};
  std::vector<float> query;
  std::vector<uint32_t> seen;
  if (!job.user.empty()) {
    if (!job.items.empty())
      return make_error(errc::invalid_argument, "give --user or --items, not both");
    uint64_t row = m->u.rows;
    for (uint64_t r = 0; r < m->users && r < m->u.rows; ++r)
      if (stores::display_id(m->row_ids, r) == job.user) {
        row = r;
        break;
      }
    if (row == m->u.rows)
      return make_error(errc::not_found, "unknown user '" + job.user +
                                           "' (use --items for a user the model has not seen)");
    query.assign(m->u.values.begin() + row * dim, m->u.values.begin() + (row + 1) * dim);
    if (row < m->seen.rows) {
      auto s = m->seen.row_indices(row);
      seen.assign(s.begin(), s.end());
    }
  } else {
    if (job.items.empty())
      return make_error(errc::invalid_argument, "give --user ID, or --items for a new user");
    if (!job.values.empty() && job.values.size() != job.items.size())
      return make_error(errc::invalid_argument, "--values needs one value per --items entry");
    std::map<std::string, uint32_t> index;
    for (uint64_t c = 0; c < m->v.rows; ++c)
      index[stores::display_id(m->col_ids, c)] = static_cast<uint32_t>(c);
    std::vector<uint32_t> ids;
    std::vector<float> values;
    for (size_t i = 0; i < job.items.size(); ++i) {
      auto it = index.find(job.items[i]);
      if (it == index.end()) {
        std::cerr << "ignoring unknown item '" << job.items[i] << "'\n";
        continue;
      }
      ids.push_back(it->second);
      values.push_back(job.values.empty() ? 1.0f : job.values[i]);
    }
    if (ids.empty())
      return make_error(errc::not_found, "none of the given items is known to the model");
    std::vector<float> gram(size_t{dim} * dim, 0.0f);
    compute::add_gramian(v, gram);
    auto projected = compute::project(v, gram, ids, values, m->params);
    if (!projected)
      return make_error(projected.error());
    query = std::move(*projected);
    seen = ids;
    std::sort(seen.begin(), seen.end());
  }
  std::vector<float> scores(m->v.rows);
  for (uint64_t c = 0; c < m->v.rows; ++c) {
    float s = 0;
    for (uint32_t k = 0; k < dim; ++k)
      s += query[k] * v.row(c)[k];
    scores[c] = s;
  }
  auto names = job.names.empty() ? std::map<std::string, std::string>{} : read_names(job.names);
  auto top = compute::top_columns(scores, seen, m->items, job.k);
  for (size_t i = 0; i < top.size(); ++i) {
    auto id = stores::display_id(m->col_ids, top[i]);
    auto name = names.find(id);
    std::printf("%2zu  %-10s %8.4f  %s\n", i + 1, id.c_str(), scores[top[i]],
                name == names.end() ? "" : name->second.c_str());
  }
  return {};
}

} // namespace darcy::wals
