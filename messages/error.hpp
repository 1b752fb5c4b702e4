// darcy::errc as a CAF error category ("darcy"): every failure above compute/ is a caf::error in
// it. Because it is a plain code plus a context message, the same error crosses actor and node
// boundaries unchanged. Register the category once per system (register_types does).
//
//   if (keys.empty())
//     return make_error(errc::empty_batch, "lookup of '" + name + "'");
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/make_message.hpp>

#include "messages/errc.hpp"

namespace darcy {

/// The CAF category atom of darcy::errc.
inline constexpr caf::atom_value errc_category = caf::atom("darcy");

/// Builds a darcy error; `context` follows the description when rendered.
caf::error make_error(errc x);
caf::error make_error(errc x, std::string context);

/// `err` with the caller's `step` named before its context ("STEP: CONTEXT"), same category
/// and code, so that a caller says which of its steps failed. An error of another category
/// becomes errc::unavailable with its rendering.
caf::error with_step(const std::string& step, const caf::error& err);

/// The caf::error of a plain_error; also what lets a plain_error convert to caf::error and
/// caf::expected<T> implicitly (CAF finds it by argument-dependent lookup).
caf::error make_error(const plain_error& x);

/// The plain_error of a caf::error, for code that answers in compute/'s form: a darcy error
/// keeps its code and context; CAF's request timeout becomes errc::deadline_exceeded, a
/// receiver down or out of reach errc::unavailable, and any other errc::io_error, each with
/// its rendering.
plain_error to_plain(const caf::error& x);

/// Moves a compute/ result into the form actors answer with.
template <class T>
caf::expected<T> to_expected(plain_expected<T>&& x) {
  if (!x)
    return make_error(x.error());
  return std::move(*x);
}

/// Renders any caf::error on one line without an actor system: darcy errors as
/// "unknown service: echo", others through CAF's own to_string.
std::string render(const caf::error& x);

/// The context of `x` alone, without its description: "echo" for "unknown service: echo".
std::string context_of(const caf::error& x);

/// The renderer CAF calls for the darcy category (see register_types).
std::string render_errc(uint8_t code, const caf::message& context);

/// True when `x` is the darcy error `code`; false for no error.
bool is(const caf::error& x, errc code);

/// The error held by `x`, or no error when it holds a value (safe where x.error() is not).
template <class T>
caf::error error_of(const caf::expected<T>& x) {
  return x ? caf::error{} : x.error();
}

} // namespace darcy

CAF_ERROR_CODE_ENUM(darcy::errc, "darcy")
