// A Criteo-format row stream (ctr_stream.hpp) as an online run's windows: each window's rows
// batched into the features of ctr_file_input, so that a model of those features trains on it
// online (ops/online/online_trainer.hpp).
#pragma once

#include <chrono>
#include <memory>

#include "ops/ctr/ctr_stream.hpp"
#include "ops/online/row_stream.hpp"

namespace darcy::ops::ctr {

/// Windows of `stream`'s rows; a stream that has not grown is asked again every `poll`.
/// `can_skip` is false for a source that cannot be read again (standard input).
std::unique_ptr<online::row_stream> ctr_row_stream(std::unique_ptr<ctr_stream> stream,
                                                   bool can_skip, std::chrono::milliseconds poll);

} // namespace darcy::ops::ctr
