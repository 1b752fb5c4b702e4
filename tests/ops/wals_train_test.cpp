#include "ops/wals_train.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/chaos.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"
#include "stores/data/wals_csr.hpp"

namespace darcy::ops {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<const stores::wals_dataset> synthetic(uint64_t rows, uint64_t cols, uint64_t nnz) {
  wals_data_spec spec;
  spec.rows = rows;
  spec.cols = cols;
  spec.nnz = nnz;
  spec.seed = 5;
  auto d = stores::load_dataset(spec);
  EXPECT_TRUE(d) << render(d.error());
  return std::make_shared<const stores::wals_dataset>(std::move(*d));
}

wals_train_options small_options(const stores::wals_dataset& d) {
  wals_train_options o;
  o.data.rows = d.matrix.rows;
  o.data.cols = d.matrix.cols;
  o.params.dim = 8;
  o.sweeps = 4;
  o.workers = 3;
  o.shards = 2;
  o.blocks_per_worker = 2;
  o.stall_timeout_ms = 60000; // a hang fails the test instead of blocking it
  return o;
}

class wals_test : public testing::Test {
protected:
  void SetUp() override {
    auto opened = session::open({});
    ASSERT_TRUE(opened) << render(opened.error());
    s = std::move(*opened);
    dir = fs::temp_directory_path() / ("darcy_wals_ops_" + std::to_string(::getpid()));
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  /// Runs `o` until the chief stalls at the cols phase of sweep `sweep`, so that the checkpoints
  /// of the sweeps before it are what the directory holds.
  void train_until_stalled(const wals_train_options& o,
                           const std::shared_ptr<const stores::wals_dataset>& d, int32_t sweep) {
    auto stalled = o;
    stalled.faults.stall_sweep = sweep;
    stalled.stall_timeout_ms = 1000;
    EXPECT_FALSE(train_wals(*s, stalled, d)) << "the run was to stall at sweep " << sweep;
  }

  wals_result train(const wals_train_options& o,
                    const std::shared_ptr<const stores::wals_dataset>& d) {
    auto r = train_wals(*s, o, d);
    EXPECT_TRUE(r) << render(r.error());
    return r ? std::move(*r) : wals_result{};
  }

  std::unique_ptr<session> s;
  fs::path dir;
};

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
  return worst;
}

/// Checks strict alternation on one chief's log: a phase issues tokens only after the previous
/// phase committed every block, and commits each of its blocks exactly once.
void expect_strict_alternation(const std::vector<wals_event>& events, uint32_t blocks) {
  std::map<std::pair<uint32_t, wals_side>, std::set<uint32_t>> committed;
  std::pair<uint32_t, wals_side> previous{0, wals_side::rows};
  bool have_previous = false;
  for (auto& e : events) {
    std::pair<uint32_t, wals_side> phase{e.sweep, e.side};
    if (e.what == "phase") {
      if (have_previous) {
        EXPECT_EQ(committed[previous].size(), blocks)
          << "sweep " << e.sweep << " " << to_string(e.side) << " began before the previous "
          << "phase committed every block";
      }
      previous = phase;
      have_previous = true;
    } else if (e.what == "issue" || e.what == "reissue") {
      EXPECT_EQ(phase, previous) << "a token of another phase was issued";
    } else if (e.what == "commit") {
      EXPECT_EQ(phase, previous);
      EXPECT_TRUE(committed[phase].insert(e.block).second) << "block committed twice";
    }
  }
}

TEST_F(wals_test, ActorsMatchThePlainLoopAndAlternateStrictly) {
  auto d = synthetic(300, 200, 4000);
  auto o = small_options(*d);
  auto r = train(o, d);
  auto at = compute::transpose(d->matrix);
  std::vector<float> u, v;
  auto losses = compute::train_local(d->matrix, at, o.params, o.sweeps, 1, u, v);
  EXPECT_LT(max_difference(r.u.values, u), 1e-4);
  EXPECT_LT(max_difference(r.v.values, v), 1e-4);
  ASSERT_EQ(r.losses.size(), losses.size());
  for (size_t i = 0; i < losses.size(); ++i)
    EXPECT_NEAR(r.losses[i], losses[i], 1e-4 * losses[i]);
  ASSERT_FALSE(r.events.empty());
  expect_strict_alternation(r.events, o.workers * o.blocks_per_worker);
  EXPECT_EQ(r.events.back().what, "done");
}

TEST_F(wals_test, BlocksReadFromACsrDirectoryGiveTheFactorsOfTheMatrixInMemory) {
  compute::synthetic_spec spec{.rows = 300, .cols = 200, .nnz = 4000, .seed = 5};
  auto d = synthetic(300, 200, 4000);
  ASSERT_FALSE(stores::write_synthetic_csr(spec, (dir / "csr").string(), 1 << 20));
  auto o = small_options(*d);
  auto in_memory = train(o, d);
  auto from_disk = o;
  from_disk.data.format = "csr";
  from_disk.data.path = (dir / "csr").string();
  auto r = train(from_disk, nullptr);
  EXPECT_EQ(r.u.values, in_memory.u.values) << "bit for bit";
  EXPECT_EQ(r.v.values, in_memory.v.values);
  // The chief adds the blocks' losses in the order their commits arrive.
  auto expect_losses = [&](const std::vector<double>& losses) {
    ASSERT_EQ(losses.size(), in_memory.losses.size());
    for (size_t i = 0; i < losses.size(); ++i)
      EXPECT_NEAR(losses[i], in_memory.losses[i], 1e-9 * in_memory.losses[i]);
  };
  expect_losses(r.losses);
  from_disk.fetch_factors = false;
  auto kept = train(from_disk, nullptr);
  EXPECT_TRUE(kept.u.values.empty() && kept.v.values.empty());
  expect_losses(kept.losses);
}

TEST_F(wals_test, ACsrDirectoryWithATruncatedSideOrNoMatrixAtAllIsRefused) {
  ASSERT_FALSE(stores::write_synthetic_csr({.rows = 60, .cols = 50, .nnz = 500, .seed = 5},
                                           (dir / "csr").string(), 1 << 20));
  auto cols = dir / "csr" / "cols.csr";
  fs::resize_file(cols, fs::file_size(cols) - 8);
  wals_train_options o;
  o.params.dim = 4;
  o.sweeps = 1;
  o.data.format = "csr";
  o.data.path = (dir / "csr").string();
  auto r = train_wals(*s, o, nullptr);
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::corrupt_file)) << render(r.error());
  EXPECT_NE(render(r.error()).find("cols.csr"), std::string::npos) << render(r.error());
  o.data.format = "tsv";
  auto none = train_wals(*s, o, nullptr);
  ASSERT_FALSE(none);
  EXPECT_TRUE(is(none.error(), errc::invalid_argument)) << render(none.error());
}

TEST_F(wals_test, LossDecreasesMonotonicallyWithCholesky) {
  auto d = synthetic(200, 150, 3000);
  auto o = small_options(*d);
  o.params.solver = wals_solver::cholesky;
  o.sweeps = 6;
  auto r = train(o, d);
  ASSERT_EQ(r.losses.size(), 6u);
  for (size_t i = 1; i < r.losses.size(); ++i)
    EXPECT_LE(r.losses[i], r.losses[i - 1] * (1 + 1e-6)) << "sweep " << i;
}

TEST_F(wals_test, SilentWorkerTokenTimesOutAndTheResultIsUnchanged) {
  auto d = synthetic(300, 200, 4000);
  auto o = small_options(*d);
  auto clean = train(o, d);
  o.faults.drop_block = 1;
  o.faults.drop_sweep = 1;
  o.token_timeout_ms = 100;
  auto faulty = train(o, d);
  EXPECT_LT(max_difference(faulty.u.values, clean.u.values), 1e-6);
  EXPECT_LT(max_difference(faulty.v.values, clean.v.values), 1e-6);
  auto timed_out = std::count_if(faulty.events.begin(), faulty.events.end(), [](auto& e) {
    return e.what == "timeout" && e.block == 1 && e.sweep == 1;
  });
  EXPECT_EQ(timed_out, 1);
  expect_strict_alternation(faulty.events, o.workers * o.blocks_per_worker);
}

TEST_F(wals_test, KilledChiefRestartsFromTheLastCheckpointWithTheSameResult) {
  auto d = synthetic(300, 200, 4000);
  auto o = small_options(*d);
  auto clean = train(o, d);
  o.checkpoint_dir = (dir / "ckpt").string();
  // The chief holds at the cols phase of sweep 2 until it is killed (a restored chief does
  // not), so that checkpoint 2 cannot be written before the kill lands, however slow the
  // machine.
  o.faults.stall_sweep = 2;
  auto service = wals_chief_service(wals_run_id(o, *d));
  bool killed = false;
  o.on_progress = [&](const wals_progress& p) {
    // Mid-sweep 2: its rows are committed, its cols are not; checkpoint 1 is the last.
    if (!killed && p.sweep == 2 && p.side == wals_side::rows) {
      killed = true;
      EXPECT_FALSE(
        runtime::kill_service(s->system(), s->registry(), service, std::chrono::seconds(5)));
    }
  };
  auto restarted = train(o, d);
  EXPECT_TRUE(killed);
  EXPECT_EQ(restarted.chief_restarts, 1u);
  EXPECT_LT(max_difference(restarted.u.values, clean.u.values), 1e-6);
  EXPECT_LT(max_difference(restarted.v.values, clean.v.values), 1e-6);
  ASSERT_FALSE(restarted.events.empty());
  EXPECT_EQ(restarted.events.front().what, "restore");
  EXPECT_EQ(restarted.events.front().sweep, 1u);
}

// Format 1, before the common checkpoint mechanism: chief.state names the sweep, and the
// factor files (the same bytes as today's parts) lie in sweep-N/.
void write_format_1_checkpoint(const fs::path& out, const checkpoint_manifest& m) {
  fs::create_directories(out / ("sweep-" + std::to_string(m.step)));
  std::ostringstream state;
  state.precision(17);
  state << "run_id " << m.wals.run_id << "\nsweep " << m.step << "\nphase rows\ncommitted\nlosses";
  for (auto l : m.wals.losses)
    state << ' ' << l;
  state << '\n';
  std::ofstream{out / "chief.state"} << state.str();
  for (auto& part : m.parts) {
    auto from = out.parent_path() / "new" / part.path;
    fs::copy_file(from, out / ("sweep-" + std::to_string(m.step)) / fs::path{part.path}.filename());
  }
}

TEST_F(wals_test, CheckpointWrittenBeforeTheCommonMechanismStillResumes) {
  auto d = synthetic(300, 200, 4000);
  auto o = small_options(*d);
  auto clean = train(o, d);
  // A run that stalls at sweep 2 leaves the checkpoint of sweep 1 as its last.
  auto stalled = o;
  stalled.checkpoint_dir = (dir / "new").string();
  train_until_stalled(stalled, d, 2);
  auto current = stores::checkpoint_dir{stalled.checkpoint_dir}.read_manifest();
  ASSERT_TRUE(current) << render(current.error());
  ASSERT_EQ(current->step, 1);
  ASSERT_EQ(current->parts.size(), 4u);
  write_format_1_checkpoint(dir / "old", *current);

  o.checkpoint_dir = (dir / "old").string();
  auto resumed = train(o, d);
  ASSERT_FALSE(resumed.events.empty());
  EXPECT_EQ(resumed.events.front().what, "restore");
  EXPECT_EQ(resumed.events.front().sweep, 1u);
  EXPECT_LT(max_difference(resumed.u.values, clean.u.values), 1e-6);
  EXPECT_LT(max_difference(resumed.v.values, clean.v.values), 1e-6);
  ASSERT_EQ(resumed.losses.size(), clean.losses.size());
  for (size_t i = 0; i < clean.losses.size(); ++i)
    EXPECT_NEAR(resumed.losses[i], clean.losses[i], 1e-9 * clean.losses[i]) << "sweep " << i;
  // The resumed run saved in today's format, on top of the old one.
  auto saved = stores::checkpoint_dir{o.checkpoint_dir}.read_manifest();
  ASSERT_TRUE(saved) << render(saved.error());
  EXPECT_EQ(saved->service, wals_service_name);
  EXPECT_EQ(saved->step, 3);
}

// Issue 12, item 13: a damaged newest checkpoint is passed over for the one before it, and a
// damaged MANIFEST for the manifest copies the checkpoints keep.
TEST_F(wals_test, DamagedNewestCheckpointFallsBackToTheOneBefore) {
  auto d = synthetic(300, 200, 4000);
  auto o = small_options(*d);
  auto clean = train(o, d);
  o.checkpoint_dir = (dir / "ckpt").string();
  struct damage {
    const char* what;
    void (*apply)(const std::string& root, const checkpoint_manifest& newest);
    uint32_t resumes_after;
  } cases[] = {
    {"a flipped byte in a factor part of the newest",
     [](const std::string& root, const checkpoint_manifest& newest) {
       auto path = root + "/" + newest.parts[1].path;
       std::fstream f{path, std::ios::in | std::ios::out | std::ios::binary};
       f.seekg(40);
       auto byte = static_cast<char>(f.get() ^ 0xff);
       f.seekp(40);
       f.put(byte);
     },
     1},
    {"a garbage MANIFEST",
     [](const std::string& root, const checkpoint_manifest&) {
       std::ofstream{root + "/MANIFEST"} << "garbage";
     },
     2},
  };
  for (auto& c : cases) {
    fs::remove_all(o.checkpoint_dir);
    // A run that stalls at sweep 3 leaves the checkpoints of sweeps 1 and 2.
    train_until_stalled(o, d, 3);
    auto newest = stores::checkpoint_dir{o.checkpoint_dir}.read_manifest();
    ASSERT_TRUE(newest) << render(newest.error());
    ASSERT_EQ(newest->step, 2) << c.what;
    ASSERT_EQ(stores::checkpoint_dir{o.checkpoint_dir}.checkpoints().size(), 2u) << c.what;
    c.apply(o.checkpoint_dir, *newest);

    auto resumed = train(o, d);
    ASSERT_FALSE(resumed.events.empty()) << c.what;
    EXPECT_EQ(resumed.events.front().what, "restore") << c.what;
    EXPECT_EQ(resumed.events.front().sweep, c.resumes_after) << c.what;
    EXPECT_LT(max_difference(resumed.u.values, clean.u.values), 1e-6) << c.what;
    EXPECT_LT(max_difference(resumed.v.values, clean.v.values), 1e-6) << c.what;
  }
}

// Issue 12, item 3: a block that fails on every issue ends the run with one clear error that
// names the block and the last good checkpoint, instead of being re-issued forever.
TEST_F(wals_test, BlockThatKeepsFailingEndsTheRunNamingTheLastCheckpoint) {
  auto d = synthetic(300, 200, 4000);
  auto o = small_options(*d);
  o.checkpoint_dir = (dir / "ckpt").string();
  o.faults.fail_block = 1;
  o.faults.drop_sweep = 2;
  o.max_token_attempts = 3;
  auto r = train_wals(*s, o, d);
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::timeout)) << render(r.error());
  auto text = render(r.error());
  EXPECT_NE(text.find("rows block 1 of sweep 2 failed 3 times"), std::string::npos) << text;
  EXPECT_NE(text.find("the last good checkpoint is sweep 1 in " + o.checkpoint_dir),
            std::string::npos)
    << text;
}

TEST_F(wals_test, WeightsThatWouldOverflowTheSolveAreRefusedUpFront) {
  auto d = synthetic(50, 40, 300);
  auto o = small_options(*d);
  o.params.weight_fn = wals_weight_fn::identity;
  o.params.alpha = 1e38f;
  auto r = train_wals(*s, o, d);
  ASSERT_FALSE(r);
  EXPECT_TRUE(is(r.error(), errc::invalid_argument)) << render(r.error());
  EXPECT_NE(render(r.error()).find("over the limit of 1e9"), std::string::npos)
    << render(r.error());
}

TEST_F(wals_test, RejectsBadOptions) {
  auto d = synthetic(50, 40, 300);
  struct bad_case {
    const char* what;
    void (*apply)(wals_train_options&);
  } cases[] = {
    {"dim 0", [](wals_train_options& o) { o.params.dim = 0; }},
    {"no workers", [](wals_train_options& o) { o.workers = 0; }},
    {"no sweeps", [](wals_train_options& o) { o.sweeps = 0; }},
    {"negative sigma", [](wals_train_options& o) { o.params.sigma = -1; }},
  };
  for (auto& c : cases) {
    auto o = small_options(*d);
    c.apply(o);
    auto r = train_wals(*s, o, d);
    ASSERT_FALSE(r) << c.what;
    EXPECT_TRUE(is(r.error(), errc::invalid_argument)) << c.what << ": " << render(r.error());
  }
}

} // namespace
} // namespace darcy::ops
