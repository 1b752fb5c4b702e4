// actors/wals/wals_chief: the run token's rules with scripted workers. Each fake worker hands
// what the chief sends it (announcements and tokens) to the test, which answers as a worker
// would, late, twice, or not at all; the factor shards are real.
#include "actors/wals/wals_chief.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <caf/event_based_actor.hpp>

#include "actors/wals/factor_shard.hpp"
#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;

/// Forwards (chief_atom, index) and (token_atom, index, token) to `inbox`.
wals_worker_actor::behavior_type fake_worker(wals_worker_actor::pointer, caf::actor inbox,
                                             uint32_t index) {
  return {
    [=](chief_atom, caf::actor) { caf::anon_send(inbox, chief_atom::value, index); },
    [=](token_atom, const wals_token& token, caf::actor) {
      caf::anon_send(inbox, token_atom::value, index, token);
    },
  };
}

class wals_chief_test : public test::system_fixture {
protected:
  ~wals_chief_test() override {
    for (auto& a : spawned)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }

  /// A chief of one sweep over 6 x 4 (one block per side, one shard) with `workers` fake
  /// workers; the test is its listener.
  void start(size_t workers, int64_t token_timeout_ms = 600000, uint32_t max_attempts = 5) {
    wals_chief_config c;
    c.params.dim = 2;
    c.rows = 6;
    c.cols = 4;
    c.sweeps = 1;
    c.token_timeout_ms = token_timeout_ms;
    c.max_attempts = max_attempts;
    c.shards = {sys.spawn(factor_shard, wals_shard_config{0, 1, c.rows, c.cols, c.params})};
    spawned.push_back(caf::actor_cast<caf::actor>(c.shards[0]));
    for (uint32_t i = 0; i < workers; ++i) {
      c.workers.push_back(sys.spawn(fake_worker, caf::actor_cast<caf::actor>(self), i));
      spawned.push_back(caf::actor_cast<caf::actor>(c.workers.back()));
    }
    c.listener = caf::actor_cast<caf::actor>(self);
    workers_ = c.workers;
    chief = sys.spawn(wals_chief, c);
    spawned.push_back(caf::actor_cast<caf::actor>(chief));
  }

  caf::actor worker(uint32_t i) const { return caf::actor_cast<caf::actor>(workers_[i]); }

  /// Waits for the announcement to worker i (other messages before it are dropped).
  void expect_announcement(uint32_t i) {
    bool seen = false;
    while (!seen)
      self->receive([&](chief_atom, uint32_t who) { seen = who == i; },
                    [](token_atom, uint32_t, const wals_token&) {}, [](const wals_progress&) {},
                    caf::after(test::patience) >>
                      [&] {
                        ADD_FAILURE() << "no announcement to worker " << i;
                        seen = true;
                      });
  }

  /// The next token the chief hands out, and to whom (announcements are skipped).
  std::pair<uint32_t, wals_token> next_token() {
    std::pair<uint32_t, wals_token> got{~0u, {}};
    bool done = false;
    while (!done)
      self->receive(
        [&](token_atom, uint32_t who, const wals_token& t) {
          got = {who, t};
          done = true;
        },
        [](chief_atom, uint32_t) {}, [](const wals_progress&) {},
        caf::after(test::patience) >>
          [&] {
            ADD_FAILURE() << "no token";
            done = true;
          });
    return got;
  }

  /// The next progress report, skipping what the workers are sent.
  wals_progress next_progress() {
    wals_progress p;
    bool done = false;
    while (!done)
      self->receive(
        [&](const wals_progress& x) {
          p = x;
          done = true;
        },
        [](chief_atom, uint32_t) {}, [](token_atom, uint32_t, const wals_token&) {},
        caf::after(test::patience) >>
          [&] {
            ADD_FAILURE() << "no progress";
            done = true;
          });
    return p;
  }

  void ready(uint32_t i, wals_token_id last = {}) {
    self->send(chief, ready_atom::value, last, worker(i));
  }

  void commit(uint32_t i, const wals_token& t) {
    self->send(chief, commit_atom::value, wals_commit{t.epoch, t.block, t.attempt, 1, 1, 0.0},
               worker(i));
  }

  /// The chief's events named `what`, after every message sent to it so far was handled.
  size_t count_events(const std::string& what) {
    auto events = ask<std::vector<wals_event>>(sys, chief, test::patience, events_atom::value);
    EXPECT_TRUE(events) << render(events.error());
    if (!events)
      return 0;
    return static_cast<size_t>(std::count_if(events->begin(), events->end(),
                                             [&](const wals_event& e) { return e.what == what; }));
  }

  static wals_token_id id_of(const wals_token& t) { return {t.epoch, t.block, t.attempt}; }

  wals_chief_actor chief;
  std::vector<wals_worker_actor> workers_;
  std::vector<caf::actor> spawned;
};

// The case of `darcy-bench wals --cluster`: a worker still loading its matrix piles up one
// ready per announcement; those sent before its token reached it must not abandon the token.
TEST_F(wals_chief_test, readies_sent_before_the_token_arrived_do_not_abandon_it) {
  start(1);
  expect_announcement(0);
  ready(0);
  auto [who, token] = next_token();
  ASSERT_EQ(who, 0u);
  for (int i = 0; i < 6; ++i)
    ready(0); // queued before the token, as after a long load
  EXPECT_EQ(count_events("abandon"), 0u);
  EXPECT_EQ(count_events("reissue"), 0u);
  commit(0, token);
  auto [who2, cols] = next_token();
  EXPECT_EQ(cols.side, wals_side::cols);
  EXPECT_EQ(cols.attempt, 0u);
  commit(0, cols);
  for (auto p = next_progress(); !p.done; p = next_progress())
    EXPECT_TRUE(p.failure.empty()) << p.failure;
  EXPECT_EQ(count_events("commit"), 2u);
}

TEST_F(wals_chief_test, a_ready_naming_the_held_token_abandons_it_and_it_is_issued_again) {
  start(1);
  expect_announcement(0);
  ready(0);
  auto first = next_token().second;
  ready(0, id_of(first));
  auto again = next_token().second;
  EXPECT_EQ(again.block, first.block);
  EXPECT_EQ(again.attempt, 1u);
  EXPECT_EQ(count_events("abandon"), 1u);
  // The first attempt's commit, arriving late, is stale; the second's counts.
  commit(0, first);
  EXPECT_EQ(count_events("stale"), 1u);
  commit(0, again);
  EXPECT_EQ(next_token().second.side, wals_side::cols);
}

TEST_F(wals_chief_test, a_block_abandoned_max_attempts_times_ends_the_run_saying_so) {
  start(1, 600000, 2);
  expect_announcement(0);
  ready(0);
  for (uint32_t attempt = 0; attempt < 2; ++attempt) {
    auto t = next_token().second;
    EXPECT_EQ(t.attempt, attempt);
    ready(0, id_of(t));
  }
  auto p = next_progress();
  EXPECT_NE(p.failure.find("rows block 0 of sweep 0 failed 2 times"), std::string::npos)
    << p.failure;
  EXPECT_NE(p.failure.find("the last good checkpoint is none"), std::string::npos) << p.failure;
  EXPECT_EQ(count_events("failed"), 1u);
}

TEST_F(wals_chief_test, a_token_not_committed_in_time_is_issued_again_to_a_worker_that_is_ready) {
  start(1, 20);
  expect_announcement(0);
  ready(0);
  auto first = next_token().second;
  // Silent: once the token times out, the chief announces itself again; the worker, done
  // with nothing, reports ready and gets the next attempt.
  expect_announcement(0);
  ready(0, id_of(first));
  auto again = next_token().second;
  EXPECT_EQ(again.attempt, 1u);
  EXPECT_EQ(count_events("timeout"), 1u);
  EXPECT_EQ(count_events("abandon"), 0u);
}

TEST_F(wals_chief_test, the_token_of_a_worker_that_went_down_goes_to_another_and_it_gets_no_more) {
  start(2);
  expect_announcement(0);
  ready(0);
  auto [holder, token] = next_token();
  ASSERT_EQ(holder, 0u);
  caf::anon_send_exit(worker(0), caf::exit_reason::kill);
  ready(1);
  auto [next_holder, again] = next_token();
  EXPECT_EQ(next_holder, 1u);
  EXPECT_EQ(again.block, token.block);
  EXPECT_EQ(again.attempt, 1u);
  EXPECT_EQ(count_events("down"), 1u);
  // A ready from the dead worker's handle is not taken.
  ready(0);
  commit(1, again);
  EXPECT_EQ(next_token().first, 1u);
}

} // namespace
} // namespace darcy::actors
