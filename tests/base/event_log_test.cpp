#include "base/event_log.hpp"

#include <gtest/gtest.h>

#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace darcy::base {
namespace {

TEST(event_log, AppendsWholeLinesInOrderAcrossCalls) {
  test::temp_dir dir{"events"};
  auto path = dir.path() + "/events.log";
  for (auto line : {"1 phase 0 rows 0 0", "1 issue 0 rows 3 0", ""})
    ASSERT_FALSE(append_line(path, line));
  auto text = base::read_file(path);
  ASSERT_TRUE(text) << render(text.error());
  EXPECT_EQ(*text, "1 phase 0 rows 0 0\n1 issue 0 rows 3 0\n\n");
}

TEST(event_log, UnwritablePathIsAnIoErrorNamingIt) {
  test::temp_dir dir{"events_bad"};
  auto path = dir.path() + "/missing-dir/events.log";
  auto err = append_line(path, "x");
  EXPECT_TRUE(is(err, errc::io_error));
  EXPECT_NE(render(err).find(path), std::string::npos) << render(err);
}

} // namespace
} // namespace darcy::base
