// How the LevelDB tier lays a row out in its database: the row's key there, and the
// conversions between a record's place in the value log and the sampling index's locator.
// Shared by the tier's source files; not an interface of its own.
#pragma once

#include <string>
#include <string_view>

#include <leveldb/status.h>
#include <caf/error.hpp>

#include "messages/error.hpp"
#include "stores/embedding/embedding_store.hpp"
#include "stores/embedding/value_log.hpp"

namespace darcy::stores::leveldb_layout {

/// Every row's key in the database starts with it; other keys (the format) do not.
inline constexpr char row_prefix = 'r';

/// Makes `out` the database key of `key`'s row, reusing its buffer.
inline void assign_row_key(std::string& out, std::string_view key) {
  out.assign(1, row_prefix);
  out.append(key);
}

inline std::string row_key(std::string_view key) {
  std::string result;
  result.reserve(key.size() + 1);
  assign_row_key(result, key);
  return result;
}

inline row_locator locator_of(const value_pointer& p) {
  return {p.offset, p.generation, p.length};
}

inline value_pointer pointer_of(const row_locator& at) {
  return {at.generation, at.offset, at.length};
}

inline caf::error db_error(const std::string& what, const leveldb::Status& status) {
  return make_error(errc::io_error, what + ": " + status.ToString());
}

} // namespace darcy::stores::leveldb_layout
