#include "stores/embedding/value_log.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::stores {
namespace {

namespace fs = std::filesystem;

class value_log_test : public ::testing::Test {
protected:
  value_log open() {
    auto log = value_log::open(dir);
    EXPECT_TRUE(log) << render(error_of(log));
    return log ? std::move(*log) : value_log{};
  }

  size_t files() const {
    return static_cast<size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator{}));
  }

  test::temp_dir scratch{"vlog"};
  const std::string& dir = scratch.path();
};

TEST_F(value_log_test, PointersRoundTripAndOtherSizesAreRefused) {
  value_pointer p{7, (uint64_t{1} << 40) + 3, 181};
  value_pointer q;
  ASSERT_TRUE(decode_pointer(encode_pointer(p), q));
  EXPECT_EQ(q, p);
  for (auto bad : {std::string{}, std::string(15, 'x'), std::string(17, 'x')}) {
    EXPECT_FALSE(decode_pointer(bad, q)) << bad.size() << " bytes";
  }
  EXPECT_EQ(q, p);
}

TEST_F(value_log_test, RecordsReadBackOnceWrittenOutAndAfterReopening) {
  value_pointer a, b;
  {
    auto log = open();
    a = log.append("alpha", "record-a");
    b = log.append("", std::string(1000, 'b'));
    EXPECT_EQ(a.length, value_log::record_length(5, 8));
    EXPECT_EQ(b.offset, a.offset + a.length);
    EXPECT_EQ(log.bytes(), a.length + b.length) << "buffered bytes count";
    ASSERT_FALSE(log.write_out(true));
    std::string record;
    ASSERT_FALSE(log.read(a, "alpha", record));
    EXPECT_EQ(record, "record-a");
  }
  auto log = open();
  std::string record;
  ASSERT_FALSE(log.read(b, "", record));
  EXPECT_EQ(record, std::string(1000, 'b'));
  auto c = log.append("gamma", "c");
  EXPECT_EQ(c.offset, b.offset + b.length) << "appends continue at the end of the file";
  ASSERT_FALSE(log.write_out(false));
  ASSERT_FALSE(log.read(c, "gamma", record));
  EXPECT_EQ(record, "c");
}

TEST_F(value_log_test, APointerToAnotherKeyOrPastTheFileIsACorruptFile) {
  auto log = open();
  auto p = log.append("alpha", "record");
  ASSERT_FALSE(log.write_out(false));
  std::string record;
  struct bad_case {
    const char* what;
    value_pointer pointer;
    std::string key;
  } cases[] = {
    {"another key", p, "alphb"},
    {"a longer key", p, "alpha2"},
    {"past the end", {p.generation, p.offset + 1, p.length}, "alpha"},
    {"an unknown generation", {p.generation + 1, p.offset, p.length}, "alpha"},
    {"shorter than its key", {p.generation, p.offset, 3}, "alpha"},
  };
  for (auto& c : cases) {
    auto err = log.read(c.pointer, c.key, record);
    EXPECT_TRUE(is(err, errc::corrupt_file)) << c.what << ": " << render(err);
  }
}

TEST_F(value_log_test, ANewGenerationTakesTheAppendsAndOldOnesAreDropped) {
  auto log = open();
  auto old = log.append("k", "old");
  ASSERT_FALSE(log.write_out(false));
  auto generation = log.start_generation();
  ASSERT_TRUE(generation);
  EXPECT_EQ(*generation, old.generation + 1);
  auto fresh = log.append("k", "new");
  EXPECT_EQ(fresh.generation, *generation);
  EXPECT_EQ(fresh.offset, 0u);
  ASSERT_FALSE(log.write_out(false));
  std::string record;
  ASSERT_FALSE(log.read(old, "k", record)) << "both generations readable until dropped";
  EXPECT_EQ(files(), 2u);
  ASSERT_FALSE(log.drop_generations_below(*generation));
  EXPECT_EQ(files(), 1u);
  EXPECT_TRUE(log.read(old, "k", record));
  ASSERT_FALSE(log.read(fresh, "k", record));
  EXPECT_EQ(record, "new");
  auto reopened = open();
  EXPECT_EQ(reopened.generation(), *generation) << "appends go to the newest file";
  log.append("k", "x");
  EXPECT_FALSE(log.start_generation()) << "refused with records buffered";
}

/// What a scan of `log` met, one line a record: "key@generation:offset" and "=record" or
/// " removed".
std::vector<std::string> scanned(value_log& log, size_t record_bytes) {
  std::vector<std::string> met;
  auto err = log.scan(record_bytes, [&](const scanned_record& r) {
    met.push_back(std::string{r.key} + "@" + std::to_string(r.at.generation) + ":" +
                  std::to_string(r.at.offset) +
                  (r.removal ? std::string{" removed"} : "=" + std::string{r.record}));
    return caf::error{};
  });
  EXPECT_FALSE(err) << render(err);
  return met;
}

TEST_F(value_log_test, AScanMeetsRecordsAndRemovalsInTheOrderWrittenOldestGenerationFirst) {
  auto log = open();
  auto a = log.append("a", "111");
  auto removal = log.append_removal("a");
  EXPECT_EQ(removal.offset, a.offset + a.length);
  EXPECT_EQ(removal.length, value_log::record_length(1, 0));
  log.append("bb", "222");
  ASSERT_FALSE(log.write_out(false));
  ASSERT_TRUE(log.start_generation());
  log.append("a", "333");
  ASSERT_FALSE(log.write_out(false));
  log.append("unwritten", "444");
  auto first = removal.offset + removal.length;
  EXPECT_EQ(scanned(log, 3), (std::vector<std::string>{
                               "a@1:0=111", "a@1:" + std::to_string(removal.offset) + " removed",
                               "bb@1:" + std::to_string(first) + "=222", "a@2:0=333"}))
    << "buffered records are not met";
  ASSERT_FALSE(log.write_out(false));
  std::vector<std::string> below;
  ASSERT_FALSE(log.scan(
    3,
    [&](const scanned_record& r) {
      below.emplace_back(r.key);
      return caf::error{};
    },
    2));
  EXPECT_EQ(below, (std::vector<std::string>{"a", "a", "bb"})) << "generations below 2 only";
}

TEST_F(value_log_test, ATornTailEndsTheScanAndIsCutSoThatAppendsFollowTheLastWholeRecord) {
  struct case_t {
    const char* name;
    size_t torn_bytes; // of the last record, what a crash left
  } cases[] = {
    {"part of its key's length", 2},
    {"its key's length and part of its key", 6},
    {"part of its row", 12},
    {"all but its last byte", 13},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    uint64_t whole = 0;
    {
      auto log = open();
      log.append("first", "1111");
      auto torn = log.append("second", "2222");
      ASSERT_EQ(torn.length, 14u);
      ASSERT_FALSE(log.write_out(false));
      whole = torn.offset;
      fs::resize_file(dir + "/values-000001.vlog", whole + c.torn_bytes);
    }
    auto log = open();
    EXPECT_EQ(scanned(log, 4), std::vector<std::string>{"first@1:0=1111"});
    ASSERT_FALSE(log.cut_torn_tail());
    EXPECT_EQ(fs::file_size(dir + "/values-000001.vlog"), whole);
    auto next = log.append("third", "3333");
    EXPECT_EQ(next.offset, whole);
    ASSERT_FALSE(log.write_out(false));
    EXPECT_EQ(scanned(log, 4), (std::vector<std::string>{
                                 "first@1:0=1111", "third@1:" + std::to_string(whole) + "=3333"}));
  }
}

} // namespace
} // namespace darcy::stores
