// Dense parameters and their optimizer's state as one checkpoint part: what an Estimator, an
// expert actor or a MoE router saves and restores on the common checkpoint mechanism
// (checkpoint_dir). A part holds each parameter's name, shape and values with its optimizer
// slots (Adam: two moments), and the step count.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "compute/nn/optimizers.hpp"
#include "stores/checkpoint/checkpoint_dir.hpp"

namespace darcy::stores {

/// The bytes of `params` and of `opt`'s state for them.
std::string encode_parameters(const compute::nn::parameter_list<float>& params,
                              const compute::nn::optimizer& opt);

/// Restores `params` and `opt` from `bytes`. errc::corrupt_file when the bytes are not such a
/// part or are truncated; errc::dimension_mismatch naming the parameter when the part's names
/// or shapes differ from `params`, or its slots per parameter from `opt`'s. On error nothing
/// changes.
caf::error decode_parameters(std::string_view bytes,
                             const compute::nn::parameter_list<float>& params,
                             compute::nn::optimizer& opt);

/// The values of a part by parameter name (its optimizer state is skipped): what an export's
/// reader assigns by name. errc::corrupt_file when the bytes are not such a part.
caf::expected<std::map<std::string, compute::nn::matrix>> decode_named_values(
  std::string_view bytes);

/// Writes the part `rel` (relative to the root, inside a checkpoint's directory).
caf::expected<file_info> write_parameter_part(const checkpoint_dir& root, const std::string& rel,
                                              const compute::nn::parameter_list<float>& params,
                                              const compute::nn::optimizer& opt);

/// Reads `part` (size and checksum checked) into `params` and `opt`, as decode_parameters.
caf::error read_parameter_part(const checkpoint_dir& root, const file_info& part,
                               const compute::nn::parameter_list<float>& params,
                               compute::nn::optimizer& opt);

/// A part that lists other parts of the same checkpoint (a group of experts saved as one
/// expert of a larger layer), in order.
caf::expected<file_info> write_part_index(const checkpoint_dir& root, const std::string& rel,
                                          const std::vector<file_info>& parts);

/// The parts `part` lists. errc::corrupt_file when it is damaged or not an index.
caf::expected<std::vector<file_info>> read_part_index(const checkpoint_dir& root,
                                                      const file_info& part);

} // namespace darcy::stores
