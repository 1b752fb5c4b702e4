#include "apps/chaos/online_watch.hpp"

#include <gtest/gtest.h>

namespace darcy::apps {
namespace {

using steady = std::chrono::steady_clock;
using seconds = std::chrono::duration<double>;

steady::time_point at(double s) {
  return steady::time_point{} + std::chrono::hours(1) +
         std::chrono::duration_cast<steady::duration>(seconds(s));
}

/// Training wrote A at 1 s, B at 3 s and C at 5 s; syncs every 2 s; an answer may come 0.1 s
/// before the soak sees its sync written.
const std::vector<online_sync_seen> syncs{{"A", 100, at(1)}, {"B", 200, at(3)}, {"C", 300, at(5)}};

struct answer_case {
  const char* behaviour;
  std::vector<online_answer> answers;
  std::vector<double> kills;
  uint64_t ahead;
  uint64_t stale;
  double stale_max_s;
  std::optional<double> caught_up_s;
};

TEST(online_watch, judges_served_syncs_against_what_training_wrote) {
  const answer_case cases[] = {
    {"answers naming the newest sync are fresh",
     {{at(1.5), "A", 100}, {at(3.5), "B", 200}, {at(5.5), "C", 300}},
     {},
     0,
     0,
     0,
     0},
    {"the export before any sync is fresh, and then lags",
     {{at(0.5), "", -1}, {at(2), "", -1}},
     {},
     0,
     0,
     1,
     0},
    {"a sync training never wrote is ahead", {{at(2), "Z", 100}}, {}, 1, 0, 0, std::nullopt},
    {"a sync named before training wrote it is ahead",
     {{at(2), "B", 200}, {at(2.95), "B", 200}},
     {},
     1,
     0,
     0,
     0},
    {"a sync with another step than training wrote is ahead",
     {{at(3.5), "B", 250}},
     {},
     1,
     0,
     0,
     std::nullopt},
    {"a lag within two intervals is not stale",
     {{at(1.5), "A", 100}, {at(6.5), "A", 100}},
     {},
     0,
     0,
     3.5,
     0},
    {"a lag beyond two intervals is stale",
     {{at(1.5), "A", 100}, {at(7.5), "A", 100}},
     {},
     0,
     1,
     4.5,
     0},
    {"before serving catches up after the last kill, lags do not count",
     {{at(8), "A", 100}, {at(8.5), "C", 300}, {at(9), "C", 300}},
     {2, 4},
     0,
     0,
     0,
     4.5},
    {"answers before the last kill do not count",
     {{at(7.5), "A", 100}, {at(8.5), "C", 300}},
     {8},
     0,
     0,
     0,
     0.5},
    {"serving that never catches up after the last kill",
     {{at(8), "A", 100}, {at(9), "B", 200}},
     {4},
     0,
     0,
     0,
     std::nullopt},
  };
  for (auto& c : cases) {
    std::vector<steady::time_point> kills;
    for (auto k : c.kills)
      kills.push_back(at(k));
    auto v =
      judge_online_answers(syncs, c.answers, kills, seconds(2), std::chrono::milliseconds(100));
    EXPECT_EQ(v.ahead, c.ahead) << c.behaviour;
    EXPECT_EQ(v.stale, c.stale) << c.behaviour;
    EXPECT_NEAR(v.stale_max_s, c.stale_max_s, 1e-6) << c.behaviour;
    EXPECT_EQ(v.caught_up_s.has_value(), c.caught_up_s.has_value()) << c.behaviour;
    if (v.caught_up_s && c.caught_up_s) {
      EXPECT_NEAR(*v.caught_up_s, *c.caught_up_s, 1e-6) << c.behaviour;
    }
  }
}

TEST(online_watch, last_line_with_finds_the_last_line_that_holds_the_needle) {
  const std::string log = "a push was answered 503\nother\nnext push was answered 409: held\ntail";
  const struct {
    const char* behaviour;
    std::string text;
    std::string needle;
    std::string line;
  } cases[] = {
    {"the last of two lines that hold it", log, "push", "next push was answered 409: held"},
    {"a line at the very start", log, "503", "a push was answered 503"},
    {"a last line with no newline after it", log, "tail", "tail"},
    {"no line holds it", log, "[warning]", ""},
    {"an empty text", "", "push", ""},
    {"a long line keeps its last 500 characters", std::string(600, 'x') + "push", "push",
     std::string(496, 'x') + "push"},
  };
  for (auto& c : cases)
    EXPECT_EQ(last_line_with(c.text, c.needle), c.line) << c.behaviour;
}

TEST(online_watch, line_at_is_the_whole_line_around_a_position) {
  const std::string text = "first\nsecond line\nlast";
  const struct {
    const char* behaviour;
    size_t at;
    std::string line;
  } cases[] = {
    {"the first line, from its start", 0, "first"},
    {"a middle line, from inside it", 9, "second line"},
    {"a newline belongs to the line it ends", 5, "first"},
    {"the last line, with no newline after it", 21, "last"},
  };
  for (auto& c : cases)
    EXPECT_EQ(line_at(text, c.at), c.line) << c.behaviour;
}

} // namespace
} // namespace darcy::apps
