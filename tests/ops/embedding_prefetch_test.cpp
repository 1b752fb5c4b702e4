// ops/embedding_prefetch: the look-ahead changes no row. A trainer that prefetches its next
// batches' rows from a LevelDB tier and is SIGKILLed in the middle of its look-ahead leaves a
// checkpoint whose restore equals the same training run without any look-ahead: the same rows,
// values, optimizer slots, and nothing written after the checkpoint.
#include "ops/embedding_prefetch.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/embedding_requests.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::ops {
namespace {

constexpr int checkpoint_step = 12;

/// Step `step`'s 64 keys, drawn from 3,000 with repeats.
std::vector<std::string> keys_of(int step) {
  std::mt19937 rng{static_cast<uint32_t>(step)};
  std::uniform_int_distribution<int> pick{0, 2999};
  std::vector<std::string> keys;
  for (int i = 0; i < 64; ++i)
    keys.push_back("k" + std::to_string(pick(rng)));
  return keys;
}

/// A table of a few hundred rows in memory, the rest on disk (in `dir`).
de_config table_in(const std::string& dir) {
  auto cfg = test::adagrad_table("items", 8);
  cfg.max_batch = 1 << 20;
  cfg.backend = backend_kind::leveldb;
  cfg.path = dir;
  cfg.cache_bytes = 1; // the smallest tier: 16 rows a shard
  return cfg;
}

/// One training step: the keys of `step` looked up and given gradients of the step.
caf::error train(session& s, const de_config& cfg, int step) {
  auto r = dynamic_embedding_lookup(s, keys_of(step), cfg, "items");
  if (!r)
    return std::move(r.error());
  matrix grads(r->rows.rows(), r->rows.cols());
  for (Eigen::Index i = 0; i < grads.rows(); ++i)
    for (Eigen::Index j = 0; j < grads.cols(); ++j)
      grads(i, j) = std::sin(float(step * 31 + i * 7 + j));
  if (auto err = r->handle.backward(grads))
    return err;
  return flush(s);
}

/// The keys of steps [first, last] as one lookup of the table, with `unseen` keys never trained.
std::vector<table_lookup> ahead(const de_config& cfg, int first, int last, int unseen) {
  table_lookup t{&cfg, "items", {}, {}};
  for (int step = first; step <= last; ++step)
    for (auto& k : keys_of(step))
      t.keys.push_back(k);
  for (int i = 0; i < unseen; ++i)
    t.keys.push_back("new" + std::to_string(i));
  return {t};
}

/// The child: trains with a look-ahead of three batches to the checkpoint, saves it, then trains
/// on with a wide look-ahead, saying 'S' before the first and 'p' before each later one, until
/// it is killed.
/// Its failures are printed to stderr and end it with status 1.
[[noreturn]] void trainer(const std::string& tables, const std::string& checkpoint, int says) {
  auto fail = [](const caf::error& err) {
    std::cerr << "the trainer: " << render(err) << std::endl;
    _exit(1);
  };
  auto cfg = table_in(tables);
  auto s = session::open({});
  if (!s)
    fail(s.error());
  for (int step = 1; step <= checkpoint_step; ++step) {
    if (auto err = prefetch_rows(**s, ahead(cfg, step + 1, step + 3, 0)))
      fail(err);
    if (auto err = train(**s, cfg, step))
      fail(err);
  }
  if (auto err = save(**s, checkpoint, {checkpoint_step, "", {}}))
    fail(err);
  for (int step = checkpoint_step + 1;; ++step) {
    if (::write(says, step == checkpoint_step + 1 ? "S" : "p", 1) != 1)
      _exit(1);
    if (auto err = prefetch_rows(**s, ahead(cfg, step, step + 40, 2000)))
      fail(err);
    if (auto err = train(**s, cfg, step))
      fail(err);
  }
}

TEST(embedding_prefetch, a_restore_after_a_kill_mid_look_ahead_equals_a_run_without_one) {
  test::temp_dir dir{"prefetch_kill"};
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0)
    trainer(dir.path() + "/killed", dir.path() + "/checkpoint", fds[1]);
  ::close(fds[1]);
  char said = 0;
  ASSERT_EQ(::read(fds[0], &said, 1), 1);
  ASSERT_EQ(said, 'S') << "the child failed before its checkpoint";
  for (int looks = 0; looks < 2; ++looks) {
    ASSERT_EQ(::read(fds[0], &said, 1), 1) << "the child failed while it looked ahead";
    ASSERT_EQ(said, 'p');
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto plain_cfg = table_in(dir.path() + "/plain");
  auto plain = session::open({});
  ASSERT_TRUE(plain);
  for (int step = 1; step <= checkpoint_step; ++step)
    ASSERT_FALSE(train(**plain, plain_cfg, step));
  auto restored = session::open({});
  ASSERT_TRUE(restored);
  auto r = restore(**restored, dir.path() + "/checkpoint");
  ASSERT_TRUE(r) << render(r.error());
  EXPECT_EQ(r->state.step, checkpoint_step);
  ASSERT_EQ(r->embeddings.size(), 1u);
  auto restored_cfg = r->embeddings[0];

  auto plain_stats = stats(**plain, "items"), restored_stats = stats(**restored, "items");
  ASSERT_TRUE(plain_stats && restored_stats);
  EXPECT_EQ(restored_stats->rows, plain_stats->rows) << "no row of a later step came back";
  std::set<std::string> trained;
  for (int step = 1; step <= checkpoint_step; ++step)
    for (auto& k : keys_of(step))
      trained.insert(k);
  std::vector<std::string> keys(trained.begin(), trained.end());
  auto read = [&](session& s, const de_config& cfg) {
    auto rows = dynamic_embedding_lookup(s, keys, cfg, "items", false);
    EXPECT_TRUE(rows) << render(rows.error());
    return rows ? rows->rows : matrix{};
  };
  EXPECT_EQ(read(**restored, restored_cfg), read(**plain, plain_cfg));
  // The optimizer's slots too: the same next step moves both tables alike.
  ASSERT_FALSE(train(**plain, plain_cfg, checkpoint_step + 1));
  ASSERT_FALSE(train(**restored, restored_cfg, checkpoint_step + 1));
  EXPECT_EQ(read(**restored, restored_cfg), read(**plain, plain_cfg));
}

} // namespace
} // namespace darcy::ops
