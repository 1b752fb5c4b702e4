// Criteo-format rows as an endless stream, for online training (`darcy estimator ctr --stream`):
// the lines of a file that grows (read to its end, then on as lines are appended), of a stream
// such as standard input, or the rows of the generator with a drift (its teacher moves on and
// its share of fresh ids grows as the stream goes).
//
//   auto stream = open_ctr_stream("generate", {.drift_rows = 100000});
//   stores::ctr_row row;
//   while (*(*stream)->next(row) == stream_state::row) { ... }
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>

#include <caf/expected.hpp>

#include "compute/ctr_synthetic.hpp"
#include "stores/data/ctr_file.hpp"

namespace darcy::ops::ctr {

enum class stream_state : uint8_t {
  /// A row was read.
  row,
  /// None yet: a file that has not grown since (ask again later).
  waiting,
  /// The stream is over (the end of standard input, or the generator's last row).
  ended,
};

struct ctr_stream_options {
  /// The generator's settings for "generate" (its fresh_rate is the stream's first).
  compute::ctr_generator_options generator;
  /// Rows a teacher phase lasts (0: no drift).
  uint64_t drift_rows = 0;
  /// The fresh-id share added at each phase, capped at 1.
  double fresh_step = 0;
  /// The generator's rows in all (0: no end).
  uint64_t rows = 0;
  bool skip_malformed = false;
};

class ctr_stream {
public:
  virtual ~ctr_stream() = default;
  /// The next row into `row` (its categorical views valid until the next call), or why there
  /// is none. errc::corrupt_file naming the source and line for a malformed line (unless
  /// skipped).
  virtual caf::expected<stream_state> next(stores::ctr_row& row) = 0;
  /// Malformed lines skipped so far.
  virtual uint64_t skipped() const { return 0; }
};

/// `source`: "generate" (the generator with o's drift), "-" (standard input), or the path of a
/// file that may grow. errc::io_error when the file cannot be opened; the generator's
/// errc::invalid_config.
caf::expected<std::unique_ptr<ctr_stream>> open_ctr_stream(const std::string& source,
                                                           const ctr_stream_options& o);

/// The lines of `in` (which must outlive the stream), named `name` in errors; at its end the
/// stream waits when `follow` (a file that may grow) and ends otherwise.
std::unique_ptr<ctr_stream> ctr_line_stream(std::istream& in, std::string name, bool follow,
                                            bool skip_malformed);

} // namespace darcy::ops::ctr
