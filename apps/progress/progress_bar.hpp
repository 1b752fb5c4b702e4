// A one-line progress bar for long CLI jobs (training): fraction done, the job's own figures
// and the ETA. On a terminal it redraws in place; otherwise it prints a line per 10%.
#pragma once

#include <iosfwd>
#include <string>

namespace darcy::apps {

class progress_bar {
public:
  /// `out` is a terminal when `interactive`.
  progress_bar(std::ostream& out, bool interactive);

  /// A bar on stderr, interactive when stderr is a terminal.
  static progress_bar on_stderr();

  /// `fraction` in [0, 1]; `figures` such as "412.3k words/s  alpha 0.0123".
  void update(double fraction, const std::string& figures, double eta_seconds);

  /// Ends the line (after a final update).
  void finish();

private:
  std::ostream* out_;
  bool interactive_;
  int last_decile_ = -1;
  bool drawn_ = false;
};

/// "1:02:03" or "2:03".
std::string format_duration(double seconds);

/// "412.3k", "1.25M".
std::string format_rate(double per_second);

} // namespace darcy::apps
