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
using ids = std::vector<uint32_t>;

floats copy_of(const shared_floats& x) { return {x.values().begin(), x.values().end()}; }

/// Shard 1 of 2 over 5 rows and 4 columns of dim 3: it owns ids 1 and 3 of each side.
class factor_shard_test : public test::system_fixture {
protected:
  factor_shard_test() {
    params.dim = 3;
    shard = sys.spawn(factor_shard, wals_shard_config{1, 2, 5, 4, params});
  }

  ~factor_shard_test() override { caf::anon_send_exit(shard, caf::exit_reason::user_shutdown); }

  caf::expected<shared_floats> view(wals_side side) {
    return ask<shared_floats>(sys, shard, test::patience, view_atom::value, side);
  }

  caf::expected<shared_floats> fetch(wals_side side, const ids& wanted) {
    return ask<shared_floats>(sys, shard, test::patience, fetch_atom::value, side, wanted);
  }

  caf::expected<ok_atom> write(uint64_t epoch, const ids& rows, const floats& values) {
    return ask<ok_atom>(sys, shard, test::patience, write_atom::value, epoch, wals_side::rows,
                        rows, values);
  }

  caf::expected<ok_atom> write_block(uint64_t epoch, uint64_t first, const floats& values) {
    return ask<ok_atom>(sys, shard, test::patience, write_atom::value, epoch, wals_side::rows,
                        first, shared_floats{values});
  }

  /// One whole phase on the rows side: open `epoch`, write both owned rows, commit.
  void phase(uint64_t epoch, const floats& values) {
    ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, begin_atom::value, epoch,
                             wals_side::rows));
    ASSERT_TRUE(write(epoch, {3, 1}, values));
    ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, commit_atom::value, epoch,
                             wals_side::rows));
  }

  wals_params params;
  factor_shard_actor shard;
};

TEST_F(factor_shard_test, StartsFromTheInitialRowsAndFetchAnswersInRequestOrder) {
  floats one(3), three(3);
  compute::initial_row(params, wals_side::cols, 1, one);
  compute::initial_row(params, wals_side::cols, 3, three);
  auto all = view(wals_side::cols);
  ASSERT_TRUE(all) << render(all.error());
  EXPECT_EQ(copy_of(*all), (floats{one[0], one[1], one[2], three[0], three[1], three[2]}));
  auto some = fetch(wals_side::cols, {3, 1});
  ASSERT_TRUE(some) << render(some.error());
  EXPECT_EQ(copy_of(*some), (floats{three[0], three[1], three[2], one[0], one[1], one[2]}));
}

TEST_F(factor_shard_test, ACommitPublishesTheWritesAndNeverChangesAViewSomeoneHolds) {
  auto initial = view(wals_side::rows);
  ASSERT_TRUE(initial);
  auto initial_values = copy_of(*initial);
  phase(7, {3, 3, 3, 1, 1, 1});
  auto first = view(wals_side::rows);
  ASSERT_TRUE(first);
  EXPECT_EQ(copy_of(*first), (floats{1, 1, 1, 3, 3, 3})) << "rows in local order: id 1, id 3";
  // The next phase writes into a pending buffer; the buffer of `initial` is still held, so it
  // must not be reused for that.
  phase(8, {4, 4, 4, 2, 2, 2});
  EXPECT_EQ(copy_of(*initial), initial_values);
  EXPECT_EQ(copy_of(*first), (floats{1, 1, 1, 3, 3, 3}));
  auto second = view(wals_side::rows);
  ASSERT_TRUE(second);
  EXPECT_EQ(copy_of(*second), (floats{2, 2, 2, 4, 4, 4}));
}

TEST_F(factor_shard_test, BlockWritesTakeTheOwnedRowsWhereverTheBlocksStart) {
  // Row id i of the side is {i, i, i} + epoch; however the side is cut into blocks, the shard
  // ends with ids 1 and 3.
  std::vector<std::vector<uint64_t>> cuts = {{0, 5}, {0, 3, 5}, {0, 2, 5}, {0, 1, 2, 3, 4, 5}};
  uint64_t epoch = 10;
  for (auto& cut : cuts) {
    ++epoch;
    ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, begin_atom::value, epoch,
                             wals_side::rows));
    for (size_t b = 0; b + 1 < cut.size(); ++b) {
      floats block;
      for (auto id = cut[b]; id < cut[b + 1]; ++id)
        block.insert(block.end(), 3, static_cast<float>(id + epoch));
      ASSERT_TRUE(write_block(epoch, cut[b], block)) << "block from " << cut[b];
    }
    ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, commit_atom::value, epoch,
                             wals_side::rows));
    auto now = view(wals_side::rows);
    ASSERT_TRUE(now);
    float one = 1 + epoch, three = 3 + epoch;
    EXPECT_EQ(copy_of(*now), (floats{one, one, one, three, three, three}))
      << cut.size() - 1 << " blocks";
  }
}

TEST_F(factor_shard_test, BadRequestsFailWithAClearErrorAndChangeNothing) {
  ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, begin_atom::value, uint64_t{5},
                           wals_side::rows));
  ASSERT_TRUE(write(5, {1, 3}, {1, 1, 1, 3, 3, 3}));
  float nan = std::nanf("");
  struct row {
    const char* what;
    caf::error error;
    errc expected;
  } rows[] = {
    {"fetch of an id owned by another shard", error_of(fetch(wals_side::rows, {2})),
     errc::invalid_argument},
    {"fetch past the side", error_of(fetch(wals_side::rows, {7})), errc::invalid_argument},
    {"write for an epoch that is not open", error_of(write(6, {1}, {0, 0, 0})),
     errc::invalid_argument},
    {"write of the wrong size", error_of(write(5, {1}, {0, 0})), errc::dimension_mismatch},
    {"write of an id owned by another shard", error_of(write(5, {2}, {0, 0, 0})),
     errc::invalid_argument},
    {"write of a non-finite value", error_of(write(5, {1}, {0, nan, 0})), errc::non_finite},
    {"block write past the side", error_of(write_block(5, 4, {0, 0, 0, 0, 0, 0})),
     errc::invalid_argument},
    {"block write of a partial row", error_of(write_block(5, 0, {0, 0, 0, 0})),
     errc::dimension_mismatch},
    {"block write with a non-finite owned row", error_of(write_block(5, 0, {0, 0, 0, nan, 0, 0})),
     errc::non_finite},
    {"commit of an epoch that is not open",
     error_of(ask<ok_atom>(sys, shard, test::patience, commit_atom::value, uint64_t{6},
                           wals_side::rows)),
     errc::invalid_argument},
  };
  for (auto& r : rows)
    EXPECT_TRUE(is(r.error, r.expected)) << r.what << ": " << render(r.error);
  ASSERT_TRUE(ask<ok_atom>(sys, shard, test::patience, commit_atom::value, uint64_t{5},
                           wals_side::rows));
  auto after = view(wals_side::rows);
  ASSERT_TRUE(after);
  EXPECT_EQ(copy_of(*after), (floats{1, 1, 1, 3, 3, 3})) << "no refused write left a trace";
}

} // namespace
} // namespace darcy::actors
