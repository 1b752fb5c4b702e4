// The update-rule part of `darcy-bench embedding`: the store's update rate with Adagrad through
// a plugin's rule against the built-in rule, in the same run, and the bytes a row costs with
// row-wise Adagrad against Adagrad at dim 16.
#pragma once

#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "apps/bench/key_stream.hpp"

namespace darcy::apps {

struct rule_bench_result {
  double builtin_update_rows_s = 0;
  double plugin_update_rows_s = 0;
  /// stats().bytes over rows at dim 16.
  double adagrad_bytes_per_row = 0;
  double rowwise_bytes_per_row = 0;
};

/// Loads `plugin` (apps/bench/rules/plugin_adagrad.cpp) and runs `updates` (batches of distinct
/// keys) through a memory store of each rule at `dim`, alternately, `repetitions` passes each;
/// the rates are medians. The bytes a row: stores of dim 16 holding the same 200,000 rows. Fails
/// when the plugin does not load.
caf::expected<rule_bench_result> run_rule_bench(const std::string& plugin,
                                                const std::vector<key_strings>& updates,
                                                uint32_t dim, uint32_t repetitions);

} // namespace darcy::apps
