#include "apps/progress/progress_bar.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace darcy::apps {

progress_bar::progress_bar(std::ostream& out, bool interactive)
  : out_(&out), interactive_(interactive) {
}

progress_bar progress_bar::on_stderr() {
  return progress_bar{std::cerr, isatty(STDERR_FILENO) != 0};
}

void progress_bar::update(double fraction, const std::string& figures, double eta_seconds) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  constexpr int width = 30;
  auto filled = static_cast<int>(fraction * width);
  char percent[16];
  std::snprintf(percent, sizeof(percent), "%5.1f%%", fraction * 100);
  std::string line = "[" + std::string(static_cast<size_t>(filled), '=') +
                     (filled < width ? ">" : "") +
                     std::string(static_cast<size_t>(std::max(0, width - filled - 1)), ' ') + "] " +
                     percent + "  " + figures + "  ETA " + format_duration(eta_seconds);
  if (interactive_) {
    *out_ << '\r' << line << "\033[K" << std::flush;
    drawn_ = true;
    return;
  }
  auto decile = static_cast<int>(fraction * 10);
  if (decile != last_decile_) {
    last_decile_ = decile;
    *out_ << line << std::endl;
  }
}

void progress_bar::finish() {
  if (interactive_ && drawn_)
    *out_ << std::endl;
  drawn_ = false;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string format_rate(double per_second) {
  char buf[32];
  if (per_second >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.2fM", per_second / 1e6);
  else if (per_second >= 1e3)
    std::snprintf(buf, sizeof(buf), "%.1fk", per_second / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.0f", per_second);
  return buf;
}

} // namespace darcy::apps
