// The rows an online run trains on, a window at a time: an endless source (a file that grows, a
// pipe, a generator) seen as Estimator example tables. Apps adapt their own format to it
// (ops/ctr/ctr_row_stream.hpp for Criteo rows).
#pragma once

#include <cstdint>
#include <memory>

#include <caf/expected.hpp>

#include "ops/estimator/input.hpp"

namespace darcy::ops::online {

/// One window of a stream.
struct window_rows {
  /// The window's features and labels; none when the stream ended before its first row.
  std::shared_ptr<estimator::example_table> table;
  /// Rows in `table`.
  uint64_t rows = 0;
  /// The stream ended with this window (it may then hold fewer rows than asked, or none).
  bool ended = false;
};

class row_stream {
public:
  virtual ~row_stream() = default;
  /// The next `rows` rows as one window, waiting for a source that has not grown yet; fewer
  /// only when the stream ends. The source's errors (a malformed row, naming it).
  virtual caf::expected<window_rows> next_window(uint64_t rows) = 0;
  /// Passes over the next `rows` rows, which a resumed run trained on before; false when the
  /// stream ended first. Only when can_skip().
  virtual caf::expected<bool> skip(uint64_t rows) = 0;
  /// False for a source that cannot be read again (standard input): its writer must resume
  /// after the rows the last sync holds, and a resumed run takes its rows as they come.
  virtual bool can_skip() const = 0;
};

} // namespace darcy::ops::online
