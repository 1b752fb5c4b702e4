// The byte record of one row with its whole state, as persistent backends store it: frequency,
// update count and last step (three 8-byte integers in host order), then the values, then the
// optimizer slots. Backends that share the record (LevelDB, Redis) share this code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "messages/embedding/embedding_config.hpp"
#include "stores/embedding/embedding_store.hpp"

namespace darcy::stores {

/// The record's size for rows of `dim` values and `slot_floats` floats of rule state.
size_t row_record_bytes(size_t dim, size_t slot_floats);

/// Appends the record of `row` to `out`.
void append_row_record(const row_record& row, std::string& out);

/// Decodes the record `bytes` of `key` into `out`, whose spans then point into `values` and
/// `slot_values`; false, with `out` unchanged, when the record has the wrong size.
bool decode_row_record(std::string_view key, std::string_view bytes, size_t dim, size_t slot_floats,
                       std::vector<float>& values, std::vector<float>& slot_values,
                       row_record& out);

/// What a persistent backend checks before it serves rows: their dim, their state's size and
/// the rule that keeps it. The rules of the optimizer kinds keep the format they always had
/// ("dim=16;slots=1;optimizer=adagrad", slots counted in vectors of dim).
std::string row_format(const de_config& cfg, size_t slot_floats);

} // namespace darcy::stores
