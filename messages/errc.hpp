// darcy::errc, the project's one set of error codes, in a header that needs no CAF, so that
// compute/ can fail with the same codes as everything above it. compute/ returns plain_error and
// plain_expected<T>; messages/error.hpp turns them into caf::error, the form that crosses actor
// and node boundaries.
//
//   plain_expected<csr_matrix> m = compute::from_triples(rows, cols, triples);
//   if (!m)
//     return m.error();   // converts to caf::error where messages/error.hpp is included
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace darcy {

/// Codes start at 1: CAF reserves 0 for "no error".
enum class errc : uint8_t {
  invalid_argument = 1,
  invalid_config,
  unknown_service,
  unknown_node,
  duplicate_node,
  node_unreachable,
  no_live_node,
  spawn_failed,
  restart_intensity_exceeded,
  timeout,
  io_error,
  not_found,
  read_only,
  dimension_mismatch,
  non_finite,
  batch_too_large,
  empty_batch,
  unknown_embedding,
  corrupt_file,
  unsupported,
  injected_fault,
  overloaded,
  permission_denied,
  deadline_exceeded,
  unavailable,
  access_denied,
  quota_exceeded,
  unauthenticated,
  out_of_order,
  unknown_rule,
};

namespace detail {

struct errc_entry {
  const char* id;
  const char* text;
};

// Indexed by the enum value; index 0 is CAF's "no error".
inline constexpr errc_entry errc_table[] = {
  {"none", "no error"},
  {"invalid_argument", "invalid argument"},
  {"invalid_config", "invalid configuration"},
  {"unknown_service", "unknown service"},
  {"unknown_node", "unknown node"},
  {"duplicate_node", "node name already in use"},
  {"node_unreachable", "node unreachable"},
  {"no_live_node", "no live node to place the child on"},
  {"spawn_failed", "spawn failed"},
  {"restart_intensity_exceeded", "restart intensity exceeded"},
  {"timeout", "timed out"},
  {"io_error", "I/O error"},
  {"not_found", "not found"},
  {"read_only", "refused in read-only mode"},
  {"dimension_mismatch", "dimension mismatch"},
  {"non_finite", "NaN or Inf value"},
  {"batch_too_large", "batch over the configured limit"},
  {"empty_batch", "empty batch"},
  {"unknown_embedding", "unknown embedding"},
  {"corrupt_file", "truncated or corrupt file"},
  {"unsupported", "unsupported"},
  {"injected_fault", "injected fault"},
  {"overloaded", "service overloaded, retry later"},
  {"permission_denied", "refused: wrong or missing cluster secret"},
  {"deadline_exceeded", "deadline exceeded"},
  {"unavailable", "not available"},
  {"access_denied", "access denied"},
  {"quota_exceeded", "quota exceeded"},
  {"unauthenticated", "missing or unknown credentials"},
  {"out_of_order", "out of order: does not follow what is held"},
  {"unknown_rule", "unknown update rule"},
};

inline const errc_entry& errc_entry_of(uint8_t code) {
  static constexpr errc_entry unknown{"unknown", "unknown darcy error"};
  return code < std::size(errc_table) ? errc_table[code] : unknown;
}

} // namespace detail

/// Short identifier, e.g. "unknown_service".
inline std::string to_string(errc x) {
  return detail::errc_entry_of(static_cast<uint8_t>(x)).id;
}

/// Human-readable sentence fragment, e.g. "unknown service".
inline const char* describe(errc x) {
  return detail::errc_entry_of(static_cast<uint8_t>(x)).text;
}

/// A darcy error without CAF: a code and its context. Default-constructed, it holds no error;
/// like caf::error, it converts to true when it holds one.
struct plain_error {
  errc code{};
  std::string context;

  explicit operator bool() const { return code != errc{}; }
};

/// "unknown service: echo", or "no error".
inline std::string render(const plain_error& x) {
  if (!x)
    return "no error";
  std::string text = describe(x.code);
  return x.context.empty() ? text : text + ": " + x.context;
}

inline bool is(const plain_error& x, errc code) {
  return x.code == code;
}

/// A T or the plain_error that prevented it; the CAF-free twin of caf::expected<T>.
template <class T>
class plain_expected {
public:
  plain_expected(T value) : value_(std::move(value)) {}
  /// Precondition: `err` holds an error.
  plain_expected(plain_error err) : error_(std::move(err)) {}

  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  /// No error while it holds a value.
  plain_error& error() { return error_; }
  const plain_error& error() const { return error_; }

private:
  std::optional<T> value_;
  plain_error error_;
};

/// The error held by `x`, or no error when it holds a value.
template <class T>
plain_error error_of(const plain_expected<T>& x) {
  return x.error();
}

} // namespace darcy
