// Darcy's errors in Python: one exception class per darcy::errc under darcy.Error (darcy.
// DimensionMismatch, darcy.UnknownEmbedding, ...), raised with the error's one-line rendering.
// The bindings are the program's edge: their C++ throws python_error, and the translator that
// bind_errors registers raises the class of its code.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include <pybind11/pybind11.h>
#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "messages/errc.hpp"

namespace darcy::python {

class python_error : public std::exception {
public:
  python_error(errc code, std::string message) : code_(code), message_(std::move(message)) {}

  errc code() const { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

private:
  errc code_;
  std::string message_;
};

/// Adds darcy.Error and a subclass per code to `m`, and the translator that raises them.
void bind_errors(pybind11::module_& m);

/// Throws the python_error of `err`: its darcy code, or errc::unavailable for an error of
/// another category, with render(err) as the message.
[[noreturn]] void raise(const caf::error& err);

/// Throws python_error(code, "DESCRIPTION: context"), rendered as make_error(code, context) is.
[[noreturn]] void raise(errc code, const std::string& context);

inline void raise_if(const caf::error& err) {
  if (err)
    raise(err);
}

template <class T>
T value_or_raise(caf::expected<T>&& x) {
  if (!x)
    raise(x.error());
  return std::move(*x);
}

} // namespace darcy::python
