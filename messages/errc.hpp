// darcy::errc, the project's one error model: every failure is a caf::error in the "darcy"
// category. Because it is a plain code plus a context message, the same error crosses actor
// and node boundaries unchanged. Register the category once per system (register_types does).
#pragma once

#include <cstdint>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/make_message.hpp>

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
};

/// The CAF category atom of darcy::errc.
inline constexpr caf::atom_value errc_category = caf::atom("darcy");

/// Short identifier, e.g. "unknown_service".
std::string to_string(errc x);

/// Human-readable sentence fragment, e.g. "unknown service".
const char* describe(errc x);

/// Builds a darcy error; `context` is shown in parentheses when rendered.
caf::error make_error(errc x);
caf::error make_error(errc x, std::string context);

/// Renders any caf::error on one line without an actor system: darcy errors as
/// "unknown service: echo", others through CAF's own to_string.
std::string render(const caf::error& x);

/// The renderer CAF calls for the darcy category (see register_types).
std::string render_errc(uint8_t code, const caf::message& context);

/// True when `x` is the darcy error `code`.
bool is(const caf::error& x, errc code);

/// The error held by `x`, or no error when it holds a value (safe where x.error() is not).
template <class T>
caf::error error_of(const caf::expected<T>& x) {
  return x ? caf::error{} : x.error();
}

} // namespace darcy

CAF_ERROR_CODE_ENUM(darcy::errc, "darcy")
