#include "ops/wals_train.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <caf/scoped_actor.hpp>

#include "actors/wals/factor_shard.hpp"
#include "actors/wals/wals_chief.hpp"
#include "actors/wals/wals_worker.hpp"
#include "compute/hash.hpp"
#include "compute/placement.hpp"
#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/process/machine.hpp"

namespace darcy::ops {

namespace {

constexpr auto fetch_timeout = std::chrono::minutes(5);

struct started {
  std::vector<factor_shard_actor> shards;
  std::vector<wals_worker_actor> workers;
  supervisor_actor supervisor;
  caf::actor chief;
  ~started() {
    if (supervisor)
      caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown);
    if (chief)
      caf::anon_send_exit(chief, caf::exit_reason::user_shutdown);
    for (auto& w : workers)
      caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
    for (auto& s : shards)
      caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  }
};

// Most factor shards and cluster workers a run may ask for.
constexpr uint64_t max_shards = 1024;
constexpr uint64_t max_cluster_workers = 4096;
// A token carries a dim x dim Gramian; 4096 makes it 64 MiB.
constexpr uint64_t max_dim = 4096;
// A row's system sums weight * v v^T in single precision: larger weights overflow it.
constexpr float max_observed_weight = 1e9f;

caf::error validate(const wals_train_options& opts, bool in_process) {
  if (auto err = compute::validate(opts.params))
    return make_error(err);
  if (opts.workers == 0)
    return make_error(errc::invalid_argument, "wals: need at least one worker");
  auto cores = std::to_string(runtime::machine_cores());
  if (auto err =
        in_process
          ? runtime::check_at_most(
              "--workers", opts.workers, runtime::max_threads(),
              "in process, 8 per core of this " + cores + "-core machine; use --cluster for more")
          : runtime::check_at_most("--workers", opts.workers, max_cluster_workers, "on a cluster"))
    return err;
  if (auto err = runtime::check_at_most("--shards", opts.shards, max_shards, "factor shards"))
    return err;
  if (auto err = runtime::check_at_most("--dim", opts.params.dim, max_dim,
                                        "a token carries a dim x dim Gramian"))
    return err;
  if (opts.sweeps == 0)
    return make_error(errc::invalid_argument, "wals: need at least one sweep (--iters)");
  if (opts.blocks_per_worker == 0)
    return make_error(errc::invalid_argument, "wals: need at least one block per worker");
  if (opts.token_timeout_ms <= 0)
    return make_error(errc::invalid_argument, "wals: the token timeout must be positive");
  if (opts.max_token_attempts == 0)
    return make_error(errc::invalid_argument, "wals: a token needs at least one attempt");
  return {};
}

/// The live members that get a run's workers (and, with shards_on_workers, its shards).
caf::expected<std::vector<runtime::spawn_target>> worker_hosts(session& s,
                                                               const wals_train_options& opts,
                                                               const std::string& what) {
  auto status = s.status();
  if (!status)
    return std::move(status.error());
  auto hosts = runtime::live_targets(*status, opts.worker_nodes);
  if (!hosts)
    return make_error(errc::no_live_node, what + ": " + render(hosts.error()));
  return hosts;
}

caf::expected<std::vector<wals_worker_actor>> spawn_workers(
  session& s, const wals_train_options& opts, const wals_worker_config& cfg,
  const std::vector<factor_shard_actor>& shards, std::shared_ptr<const stores::wals_dataset> data) {
  auto& sys = s.system();
  std::vector<wals_worker_actor> workers;
  if (s.in_process()) {
    for (uint32_t i = 0; i < opts.workers; ++i)
      workers.push_back(sys.spawn<caf::detached>(actors::wals_worker, cfg, shards, data));
    return workers;
  }
  auto hosts = worker_hosts(s, opts, "wals workers");
  if (!hosts)
    return std::move(hosts.error());
  return runtime::spawn_group<wals_worker_actor>(
    sys, *hosts, s.timeout(), actors::wals_worker_state::name,
    [&](size_t) { return caf::make_message(cfg, shards); }, opts.workers);
}

/// `count` factor shards of a rows x cols run: in this process, or round-robin on the
/// workers' nodes (opts.shards_on_workers on a cluster).
caf::expected<std::vector<factor_shard_actor>> spawn_shards(session& s,
                                                            const wals_train_options& opts,
                                                            uint32_t count, uint64_t rows,
                                                            uint64_t cols) {
  auto& sys = s.system();
  if (s.in_process() || !opts.shards_on_workers) {
    std::vector<factor_shard_actor> shards;
    for (uint32_t i = 0; i < count; ++i)
      shards.push_back(
        sys.spawn(actors::factor_shard, wals_shard_config{i, count, rows, cols, opts.params}));
    return shards;
  }
  auto hosts = worker_hosts(s, opts, "wals factor shards");
  if (!hosts)
    return std::move(hosts.error());
  return runtime::spawn_group<factor_shard_actor>(
    sys, *hosts, s.timeout(), actors::factor_shard_state::name,
    [&](size_t i) {
      return caf::make_message(
        wals_shard_config{static_cast<uint32_t>(i), count, rows, cols, opts.params});
    },
    count);
}

std::vector<std::string> chief_nodes(session& s, const wals_train_options& opts) {
  std::vector<std::string> nodes;
  if (s.in_process())
    return nodes;
  if (!opts.chief_node.empty())
    nodes.push_back(opts.chief_node);
  if (auto status = s.status())
    for (auto& m : status->members)
      if (m.name != opts.chief_node)
        nodes.push_back(m.name);
  return nodes;
}

/// Gathers one side of the factors from the shards, in id order, a chunk of rows a message.
caf::expected<stores::float_matrix> fetch_side(session& s, const started& run, wals_side side,
                                               uint64_t n, uint32_t dim, uint64_t chunk) {
  stores::float_matrix m{n, dim, std::vector<float>(n * dim)};
  auto count = static_cast<uint32_t>(run.shards.size());
  for (uint32_t i = 0; i < count; ++i) {
    auto rows = compute::rows_owned(n, i, count);
    std::optional<uint64_t> version;
    for (uint64_t first = 0; first < rows; first += chunk) {
      auto want = std::min(chunk, rows - first);
      auto view = runtime::ask<factor_snapshot>(s.system(), run.shards[i], fetch_timeout,
                                                view_atom::value, side, uint64_t{0}, first, want);
      if (!view)
        return std::move(view.error());
      auto values = view->rows.values();
      if (values.size() != want * dim)
        return make_error(errc::dimension_mismatch, "wals: shard " + std::to_string(i) +
                                                      " answered " + std::to_string(values.size()) +
                                                      " values for " + std::to_string(want) +
                                                      " rows");
      if (version && *version != view->version)
        return make_error(errc::invalid_argument,
                          "wals: shard " + std::to_string(i) + " changed while read");
      version = view->version;
      for (uint64_t j = 0; j < want; ++j)
        std::copy_n(values.data() + j * dim, dim,
                    m.values.data() + compute::global_id(first + j, i, count) * dim);
    }
  }
  return m;
}

struct matrix_shape {
  uint64_t rows = 0;
  uint64_t cols = 0;
  uint64_t nnz = 0;
  float largest = 0;
};

/// The shape of `data`, or with none of opts.data's "csr" directory (its files' headers).
caf::expected<matrix_shape> shape_of(const wals_train_options& opts,
                                     const stores::wals_dataset* data) {
  if (data) {
    auto& m = data->matrix;
    float largest = 0;
    for (auto v : m.values)
      largest = std::max(largest, v);
    return matrix_shape{m.rows, m.cols, m.nnz(), largest};
  }
  if (opts.data.format != "csr")
    return make_error(errc::invalid_argument,
                      "wals: no matrix given, and the data's format is not csr");
  auto sides = stores::open_wals_csr(opts.data.path);
  if (!sides)
    return std::move(sides.error());
  auto& r = *sides->rows;
  return matrix_shape{r.rows(), r.cols(), r.nnz(), std::max(r.largest(), sides->cols->largest())};
}

} // namespace

std::string wals_chief_service(uint64_t run_id) {
  return "wals_chief." + std::to_string(run_id);
}

uint64_t wals_run_id(const wals_train_options& opts, const stores::wals_dataset& data) {
  return wals_run_id(opts, data.matrix.rows, data.matrix.cols, data.matrix.nnz());
}

uint64_t wals_run_id(const wals_train_options& opts, uint64_t rows, uint64_t cols, uint64_t nnz) {
  auto& p = opts.params;
  auto h = compute::mix64(rows, cols);
  h = compute::mix64(h, nnz);
  for (uint64_t x :
       {uint64_t{p.dim}, uint64_t{p.cg_steps}, p.seed, uint64_t{opts.sweeps},
        uint64_t{opts.workers}, uint64_t{opts.shards}, uint64_t{opts.blocks_per_worker},
        static_cast<uint64_t>(p.solver), static_cast<uint64_t>(p.weight_fn)})
    h = compute::mix64(h, x);
  for (float x : {p.alpha, p.sigma, p.lambda, p.init_scale})
    h = compute::mix64(h, compute::hash_key(std::to_string(x)));
  h = compute::mix64(
    h, compute::hash_key(opts.data.path + "|" + opts.data.row_features + "|" +
                         opts.data.col_features + "|" + std::to_string(opts.data.holdout)));
  return h;
}

caf::expected<wals_result> train_wals(session& s, const wals_train_options& opts,
                                      std::shared_ptr<const stores::wals_dataset> data) {
  if (auto err = validate(opts, s.in_process()))
    return err;
  auto& sys = s.system();
  auto m = shape_of(opts, data.get());
  if (!m)
    return std::move(m.error());
  if (m->nnz == 0)
    return make_error(errc::invalid_argument, "wals: the matrix has no entries");
  // Weights grow with the values: refuse, up front, those whose solve would overflow.
  auto largest = m->largest;
  auto weight = compute::observed_weight(opts.params, largest);
  if (!std::isfinite(weight) || weight > max_observed_weight)
    return make_error(
      errc::invalid_argument,
      "wals: the largest value, " + std::to_string(largest) +
        ", gets the observed weight 1 + alpha * f(value) = " + std::to_string(weight) +
        ", over the limit of 1e9 (lower --alpha, or use "
        "--weight log1p)");
  // The shards hold U and V twice (current and pending) in this process, unless on the nodes.
  auto factor_bytes = (m->rows + m->cols) * uint64_t{opts.params.dim} * sizeof(float) * 2;
  bool shards_here = s.in_process() || !opts.shards_on_workers;
  if (shards_here && factor_bytes > runtime::machine_memory_bytes() / 10 * 8)
    return make_error(errc::invalid_argument,
                      "wals: --dim " + std::to_string(opts.params.dim) + " needs " +
                        std::to_string(factor_bytes >> 20) + " MiB of factors for " +
                        std::to_string(m->rows) + " x " + std::to_string(m->cols) +
                        ", over 80% of this machine's " +
                        std::to_string(runtime::machine_memory_bytes() >> 20) + " MiB");
  started run;
  auto shard_count = opts.shards == 0 ? std::min(opts.workers, default_max_shards) : opts.shards;
  auto shards = spawn_shards(s, opts, shard_count, m->rows, m->cols);
  if (!shards)
    return std::move(shards.error());
  run.shards = std::move(*shards);
  wals_worker_config worker_cfg{opts.data, opts.params, opts.faults, opts.view_chunk_rows};
  auto workers = spawn_workers(s, opts, worker_cfg, run.shards, data);
  if (!workers)
    return std::move(workers.error());
  run.workers = *workers;

  caf::scoped_actor self{sys};
  wals_chief_config chief_cfg;
  chief_cfg.params = opts.params;
  chief_cfg.rows = m->rows;
  chief_cfg.cols = m->cols;
  auto blocks = opts.workers * opts.blocks_per_worker;
  chief_cfg.row_blocks = static_cast<uint32_t>(std::min<uint64_t>(blocks, m->rows));
  chief_cfg.col_blocks = static_cast<uint32_t>(std::min<uint64_t>(blocks, m->cols));
  chief_cfg.sweeps = opts.sweeps;
  chief_cfg.checkpoint_dir = opts.checkpoint_dir;
  chief_cfg.run_id = wals_run_id(opts, m->rows, m->cols, m->nnz);
  chief_cfg.token_timeout_ms = opts.token_timeout_ms;
  chief_cfg.max_attempts = opts.max_token_attempts;
  chief_cfg.faults = opts.faults;
  chief_cfg.workers = run.workers;
  chief_cfg.shards = run.shards;
  chief_cfg.listener = caf::actor_cast<caf::actor>(self);
  supervisor_spec spec;
  spec.name = "wals";
  spec.intensity = 20;
  spec.period_ms = 60000;
  child_spec chief;
  chief.id = "wals_chief";
  chief.factory = actors::wals_chief_state::name;
  chief.args = caf::make_message(chief_cfg);
  chief.nodes = chief_nodes(s, opts);
  chief.service = wals_chief_service(chief_cfg.run_id);
  spec.children.push_back(chief);
  run.supervisor = s.supervise(spec);
  self->send(run.supervisor, subscribe_atom::value, caf::actor_cast<caf::actor>(self));
  for (auto& w : run.workers)
    self->monitor(w);

  wals_result result;
  result.workers = opts.workers;
  result.shards = shard_count;
  std::set<caf::actor_addr> down;
  caf::error failure;
  bool done = false;
  while (!done && !failure) {
    self->receive(
      [&](wals_progress& p) {
        if (!p.failure.empty()) {
          failure = make_error(errc::timeout, std::move(p.failure));
          return;
        }
        if (p.done) {
          done = true;
          return;
        }
        if (p.side == wals_side::cols) {
          result.losses.resize(std::max<size_t>(result.losses.size(), p.sweep + 1));
          result.losses[p.sweep] = p.loss;
        }
        if (opts.on_progress)
          opts.on_progress(p);
      },
      [&](supervisor_event& e) {
        if (e.kind == supervisor_event_kind::child_restarted) {
          ++result.chief_restarts;
          if (opts.on_chief_restart)
            opts.on_chief_restart(e.node);
        } else if (e.kind == supervisor_event_kind::gave_up) {
          failure = make_error(errc::restart_intensity_exceeded, "wals chief: " + e.reason);
        }
      },
      [&](caf::down_msg& msg) {
        down.insert(msg.source);
        if (down.size() == run.workers.size())
          failure = make_error(errc::node_unreachable, "wals: every worker is down");
      },
      caf::after(std::chrono::milliseconds(opts.stall_timeout_ms)) >>
        [&] {
          failure = make_error(errc::timeout, "wals: no progress from the chief for " +
                                                std::to_string(opts.stall_timeout_ms) + " ms");
        });
  }
  if (failure)
    return failure;
  auto children =
    runtime::ask<std::vector<child_info>>(sys, run.supervisor, s.timeout(), children_atom::value);
  if (children && !children->empty() && children->front().actor) {
    run.chief = children->front().actor;
    auto chief_actor = caf::actor_cast<wals_chief_actor>(children->front().actor);
    auto events =
      runtime::ask<std::vector<wals_event>>(sys, chief_actor, s.timeout(), events_atom::value);
    if (events)
      result.events = std::move(*events);
  }
  if (!opts.fetch_factors)
    return result;
  auto chunk =
    opts.view_chunk_rows > 0 ? opts.view_chunk_rows : factor_view_chunk_rows(opts.params.dim);
  auto u = fetch_side(s, run, wals_side::rows, m->rows, opts.params.dim, chunk);
  if (!u)
    return std::move(u.error());
  auto v = fetch_side(s, run, wals_side::cols, m->cols, opts.params.dim, chunk);
  if (!v)
    return std::move(v.error());
  result.u = std::move(*u);
  result.v = std::move(*v);
  return result;
}

} // namespace darcy::ops
