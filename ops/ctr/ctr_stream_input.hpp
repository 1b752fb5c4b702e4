// A Criteo-format stream (ctr_stream.hpp) as Estimator input: batches of rows r % shards == shard
// of the generator, a file that grows or standard input, so that worker w of n of a distributed
// job trains its partition of one stream. Its position is the rows read, every shard's counted;
// a seek reads the stream again up to there (a generator is a function of the row's index).
//
//   auto in = ctr_stream_input("generate", {.drift_rows = 500000}, {.shard = 1, .shards = 2});
#pragma once

#include <chrono>
#include <string>

#include "ops/ctr/ctr_input.hpp"
#include "ops/ctr/ctr_stream.hpp"

namespace darcy::ops::ctr {

/// `source` and `stream` as open_ctr_stream takes them; of `o`, batch_size, shard, shards and
/// max_rows (the rows of the stream read in all, 0: no end; epochs is not read). The input ends
/// with the stream; a stream that has not grown is asked again every `poll`. The stream's errors
/// (errc::corrupt_file naming the line) end it; errc::invalid_config for a batch of 0 or a shard
/// ≥ shards.
estimator::input_fn ctr_stream_input(std::string source, ctr_stream_options stream,
                                     ctr_input_options o,
                                     std::chrono::milliseconds poll = std::chrono::milliseconds{
                                       100});

} // namespace darcy::ops::ctr
