// actors/wals/wals_worker: a worker over real factor shards, with the test as its chief. A
// token's rows reach the shards as the plain solve computes them, and every ready names the
// token the worker received last, so the chief can tell an abandoned token from a stale ready.
#include "actors/wals/wals_worker.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "actors/wals/factor_shard.hpp"
#include "compute/wals_math.hpp"
#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;

class wals_worker_test : public test::system_fixture {
protected:
  wals_worker_test() {
    params.dim = 3;
    wals_data_spec spec;
    spec.rows = 30;
    spec.cols = 20;
    spec.nnz = 150;
    spec.seed = 4;
    auto loaded = stores::load_dataset(spec);
    EXPECT_TRUE(loaded) << render(loaded.error());
    data = std::make_shared<const stores::wals_dataset>(std::move(*loaded));
    for (uint32_t s = 0; s < 2; ++s)
      shards.push_back(sys.spawn(
        factor_shard, wals_shard_config{s, 2, data->matrix.rows, data->matrix.cols, params}));
  }

  ~wals_worker_test() override {
    for (auto& s : shards)
      caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
    if (worker)
      caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
  }

  void start(wals_faults faults = {}) {
    wals_worker_config c;
    c.params = params;
    c.faults = faults;
    worker = sys.spawn(wals_worker, c, shards, data);
  }

  /// Announces the test as the chief; the worker answers ready.
  wals_token_id announce() {
    self->send(worker, chief_atom::value, caf::actor_cast<caf::actor>(self));
    return expect_ready();
  }

  /// The worker's next message, which must be a ready (a commit fails the test).
  wals_token_id expect_ready() {
    wals_token_id last;
    self->receive([&](ready_atom, const wals_token_id& id, const caf::actor&) { last = id; },
                  [&](commit_atom, const wals_commit& c, const caf::actor&) {
                    ADD_FAILURE() << "committed block " << c.block << " instead of a ready";
                  },
                  caf::after(test::patience) >> [] { ADD_FAILURE() << "no ready"; });
    return last;
  }

  /// The rows token of the whole matrix at `epoch`, with V's Gramian from the shards.
  wals_token rows_token(uint64_t epoch, uint32_t attempt = 0) {
    std::vector<float> gramian(size_t{params.dim} * params.dim, 0.0f);
    for (auto& s : shards) {
      auto part =
        ask<std::vector<float>>(sys, s, test::patience, gram_atom::value, wals_side::cols);
      EXPECT_TRUE(part);
      for (size_t i = 0; part && i < gramian.size(); ++i)
        gramian[i] += (*part)[i];
    }
    for (auto& s : shards)
      EXPECT_TRUE(ask<ok_atom>(sys, s, test::patience, begin_atom::value, epoch, wals_side::rows));
    return {epoch, 0, wals_side::rows, 0, 1, attempt, gramian};
  }

  /// U as the shards hold it now, in id order.
  std::vector<float> rows_held() {
    std::vector<std::vector<float>> parts;
    for (auto& s : shards) {
      auto snap = ask<factor_snapshot>(sys, s, test::patience, view_atom::value, wals_side::rows,
                                       uint64_t{0});
      EXPECT_TRUE(snap);
      parts.emplace_back(snap->rows.values().begin(), snap->rows.values().end());
    }
    std::vector<float> u(data->matrix.rows * params.dim);
    for (uint64_t id = 0; id < data->matrix.rows; ++id)
      std::copy_n(parts[id % 2].data() + (id / 2) * params.dim, params.dim,
                  u.data() + id * params.dim);
    return u;
  }

  wals_params params;
  std::shared_ptr<const stores::wals_dataset> data;
  std::vector<factor_shard_actor> shards;
  wals_worker_actor worker;
};

TEST_F(wals_worker_test, a_token_commits_the_rows_the_plain_solve_gives) {
  start();
  EXPECT_EQ(announce(), wals_token_id{}) << "no token received yet";
  auto token = rows_token(7);
  self->send(worker, token_atom::value, token, caf::actor_cast<caf::actor>(self));
  wals_commit c;
  self->receive([&](commit_atom, const wals_commit& x, const caf::actor&) { c = x; },
                caf::after(test::patience) >> [] { ADD_FAILURE() << "no commit"; });
  EXPECT_EQ(c.epoch, 7u);
  EXPECT_EQ(c.rows, data->matrix.rows);
  EXPECT_EQ(c.entries, data->matrix.nnz());
  for (auto& s : shards)
    ASSERT_TRUE(
      ask<ok_atom>(sys, s, test::patience, commit_atom::value, uint64_t{7}, wals_side::rows));

  // The reference: CG from the initial U against the initial V, with the token's Gramian.
  auto d = params.dim;
  std::vector<float> u(data->matrix.rows * d), v(data->matrix.cols * d);
  for (uint64_t i = 0; i < data->matrix.rows; ++i)
    compute::initial_row(params, wals_side::rows, i, {u.data() + i * d, d});
  for (uint64_t i = 0; i < data->matrix.cols; ++i)
    compute::initial_row(params, wals_side::cols, i, {v.data() + i * d, d});
  auto loss = compute::solve_rows(data->matrix, 0, data->matrix.rows,
                                  compute::factor_view{v.data(), data->matrix.cols, d},
                                  token.gramian, params, u.data());
  EXPECT_EQ(rows_held(), u);
  EXPECT_NEAR(c.observed_loss, loss, 1e-6 * std::max(1.0, std::abs(loss)));
}

TEST_F(wals_worker_test, a_token_it_cannot_solve_is_abandoned_and_its_ready_names_it) {
  struct {
    const char* what;
    wals_faults faults;
    bool bad_gramian;
  } cases[] = {
    {"a Gramian of the wrong size", {}, true},
    {"the injected failure of its block", {.fail_block = 0}, false},
  };
  for (auto& c : cases) {
    start(c.faults);
    announce();
    auto token = rows_token(9, 2);
    if (c.bad_gramian)
      token.gramian.pop_back();
    self->send(worker, token_atom::value, token, caf::actor_cast<caf::actor>(self));
    EXPECT_EQ(expect_ready(), (wals_token_id{9, 0, 2})) << c.what;
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    worker = nullptr;
  }
}

} // namespace
} // namespace darcy::actors
