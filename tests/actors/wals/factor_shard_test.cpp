#include "actors/wals/factor_shard.hpp"

#include <cmath>

#include "compute/wals_math.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "tests/support/test_system.hpp"

namespace darcy::actors {
namespace {

using runtime::ask;
using floats = std::vector<float>;

floats copy_of(const shared_floats& x) {
  return {x.values().begin(), x.values().end()};
}

/// Shard 1 of 2 over 5 rows and 4 columns of dim 3: it owns ids 1 and 3 of each side.
class factor_shard_test : public test::system_fixture {
protected:
  factor_shard_test() {
    params.dim = 3;
    shard = sys.spawn(factor_shard, wals_shard_config{1, 2, 5, 4, params});
  }

  ~factor_shard_test() override { caf::anon_send_exit(shard, caf::exit_reason::user_shutdown); }

  caf::expected<factor_snapshot> snapshot(wals_side side, uint64_t known) {
    return ask<factor_snapshot>(sys, shard, test::patience, view_atom::value, side, known);
  }

  caf::expected<shared_floats> view(wals_side side) {
    auto s = snapshot(side, 0);
    if (!s)
      return std::move(s.error());
    return s->rows;
  }

  /// Writes rows first .. first + rows - 1: `values` holds all of them or the owned ones.
  caf::expected<ok_atom> write(uint64_t epoch, uint64_t first, uint64_t rows,
                               const floats& values) {
    return ask<ok_atom>(sys, shard, test::patience, write_atom::value, epoch, wals_side::rows,
                        first, rows, shared_floats{values});
  }

  caf::expected<ok_atom> write_block(uint64_t epoch, uint64_t first, const floats& values) {
    return write(epoch, first, values.size() / 3, values);
  }

  /// One whole phase on the rows side: open `epoch`, write the owned rows (ids 1 and 3) of
  /// all five, commit.
  void phase(uint64_t epoch, const floats& values) {
    ASSERT_TRUE(
      ask<ok_atom>(sys, shard, test::patience, begin_atom::value, epoch, wals_side::rows));
    ASSERT_TRUE(write(epoch, 0, 5, values));
    ASSERT_TRUE(
      ask<ok_atom>(sys, shard, test::patience, commit_atom::value, epoch, wals_side::rows));
  }

  wals_params params;
  factor_shard_actor shard;
};

TEST_F(factor_shard_test, StartsFromTheInitialRowsInLocalOrder) {
  floats one(3), three(3);
  compute::initial_row(params, wals_side::cols, 1, one);
  compute::initial_row(params, wals_side::cols, 3, three);
  auto all = view(wals_side::cols);
  ASSERT_TRUE(all) << render(all.error());
  EXPECT_EQ(copy_of(*all), (floats{one[0], one[1], one[2], three[0], three[1], three[2]}));
}

TEST_F(factor_shard_test, AViewOfAKnownVersionCarriesNoRowsAndEveryCommitMakesANewVersion) {
  auto first = snapshot(wals_side::rows, 0);
  ASSERT_TRUE(first);
  ASSERT_GT(first->version, 0u);
  EXPECT_EQ(first->rows.size(), 6u);
  auto again = snapshot(wals_side::rows, first->version);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->version, first->version);
  EXPECT_EQ(again->rows.size(), 0u) << "the asker holds this version already";
  phase(3, {3, 3, 3, 1, 1, 1});
  auto after = snapshot(wals_side::rows, first->version);
  ASSERT_TRUE(after);
  EXPECT_GT(after->version, first->version);
  EXPECT_EQ(copy_of(after->rows), (floats{3, 3, 3, 1, 1, 1}));
  auto cols = snapshot(wals_side::cols, first->version);
  ASSERT_TRUE(cols);
  EXPECT_EQ(cols->version, first->version) << "a commit of rows leaves cols' version";
}

// A remote reader takes a side in chunks: each chunk is the local rows asked for, cut short at
// the side's end, and a reader that knows the version gets none.
TEST_F(factor_shard_test, ARangeViewAnswersTheLocalRowsAskedForCutAtTheSidesEnd) {
  auto all = snapshot(wals_side::cols, 0); // 2 local rows: ids 1 and 3
  ASSERT_TRUE(all);
  auto rows = copy_of(all->rows);
  struct row {
    const char* name;
    uint64_t known, first, count;
    floats want;
  };
  for (auto& c : std::vector<row>{
         {"the first row", 0, 0, 1, floats(rows.begin(), rows.begin() + 3)},
         {"the second row", 0, 1, 1, floats(rows.begin() + 3, rows.end())},
         {"both", 0, 0, 2, rows},
         {"more than there are", 0, 1, 5, floats(rows.begin() + 3, rows.end())},
         {"past the end", 0, 2, 1, {}},
         {"a huge count", 0, 0, ~uint64_t{0}, rows},
         {"none", 0, 0, 0, {}},
         {"the version known", all->version, 0, 2, {}},
       }) {
    SCOPED_TRACE(c.name);
    auto part = ask<factor_snapshot>(sys, shard, test::patience, view_atom::value, wals_side::cols,
                                     c.known, c.first, c.count);
    ASSERT_TRUE(part) << render(part.error());
    EXPECT_EQ(part->version, all->version);
    EXPECT_EQ(copy_of(part->rows), c.want);
  }
}

TEST_F(factor_shard_test, ACommitPublishesTheWritesAndNeverChangesAViewSomeoneHolds) {
  auto initial = view(wals_side::rows);
  ASSERT_TRUE(initial);
  auto initial_values = copy_of(*initial);
  phase(7, {1, 1, 1, 3, 3, 3});
  auto first = view(wals_side::rows);
  ASSERT_TRUE(first);
  EXPECT_EQ(copy_of(*first), (floats{1, 1, 1, 3, 3, 3})) << "rows in local order: id 1, id 3";
  // The next phase writes into a pending buffer; the buffer of `initial` is still held, so it
  // must not be reused for that.
  phase(8, {2, 2, 2, 4, 4, 4});
  EXPECT_EQ(copy_of(*initial), initial_values);
  EXPECT_EQ(copy_of(*first), (floats{1, 1, 1, 3, 3, 3}));
  auto second = view(wals_side::rows);
  ASSERT_TRUE(second);
  EXPECT_EQ(copy_of(*second), (floats{2, 2, 2, 4, 4, 4}));
}

TEST_F(factor_shard_test, WritesTakeTheOwnedRowsWhereverTheBlocksStartWholeOrOwnedOnly) {
  // Row id i of the side is {i, i, i} + epoch; however the side is cut into blocks, and whether
  // a write carries the whole block or only the shard's rows, the shard ends with ids 1 and 3.
  std::vector<std::vector<uint64_t>> cuts = {{0, 5}, {0, 3, 5}, {0, 2, 5}, {0, 1, 2, 3, 4, 5}};
  uint64_t epoch = 10;
  for (auto& cut : cuts) {
    ++epoch;
    ASSERT_TRUE(
      ask<ok_atom>(sys, shard, test::patience, begin_atom::value, epoch, wals_side::rows));
    for (size_t b = 0; b + 1 < cut.size(); ++b) {
      floats block, owned;
      for (auto id = cut[b]; id < cut[b + 1]; ++id) {
        block.insert(block.end(), 3, static_cast<float>(id + epoch));
        if (id % 2 == 1)
          owned.insert(owned.end(), 3, static_cast<float>(id + epoch));
      }
      auto& values = b % 2 == 0 ? block : owned;
      ASSERT_TRUE(write(epoch, cut[b], cut[b + 1] - cut[b], values))
        << "block from " << cut[b] << (b % 2 == 0 ? ", whole" : ", owned only");
    }
    ASSERT_TRUE(
      ask<ok_atom>(sys, shard, test::patience, commit_atom::value, epoch, wals_side::rows));
    auto now = view(wals_side::rows);
    ASSERT_TRUE(now);
    float one = 1 + epoch, three = 3 + epoch;
    EXPECT_EQ(copy_of(*now), (floats{one, one, one, three, three, three}))
      << cut.size() - 1 << " blocks";
  }
}

TEST_F(factor_shard_test, BadRequestsFailWithAClearErrorAndChangeNothing) {
  ASSERT_TRUE(
    ask<ok_atom>(sys, shard, test::patience, begin_atom::value, uint64_t{5}, wals_side::rows));
  ASSERT_TRUE(write(5, 1, 3, {1, 1, 1, 3, 3, 3}));
  float nan = std::nanf("");
  struct row {
    const char* what;
    caf::error error;
    errc expected;
  } rows[] = {
    {"write for an epoch that is not open", error_of(write(6, 1, 1, {0, 0, 0})),
     errc::invalid_argument},
    {"write of neither all rows nor the owned ones", error_of(write(5, 0, 4, {0, 0, 0})),
     errc::dimension_mismatch},
    {"owned-only write with a non-finite value", error_of(write(5, 1, 2, {0, nan, 0})),
     errc::non_finite},
    {"block write past the side", error_of(write_block(5, 4, {0, 0, 0, 0, 0, 0})),
     errc::invalid_argument},
    {"block write of a partial row", error_of(write_block(5, 0, {0, 0, 0, 0})),
     errc::dimension_mismatch},
    {"block write with a non-finite owned row", error_of(write_block(5, 0, {0, 0, 0, nan, 0, 0})),
     errc::non_finite},
    {"commit of an epoch that is not open",
     error_of(
       ask<ok_atom>(sys, shard, test::patience, commit_atom::value, uint64_t{6}, wals_side::rows)),
     errc::invalid_argument},
  };
  for (auto& r : rows)
    EXPECT_TRUE(is(r.error, r.expected)) << r.what << ": " << render(r.error);
  ASSERT_TRUE(
    ask<ok_atom>(sys, shard, test::patience, commit_atom::value, uint64_t{5}, wals_side::rows));
  auto after = view(wals_side::rows);
  ASSERT_TRUE(after);
  EXPECT_EQ(copy_of(*after), (floats{1, 1, 1, 3, 3, 3})) << "no refused write left a trace";
}

} // namespace
} // namespace darcy::actors
