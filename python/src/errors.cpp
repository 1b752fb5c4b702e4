#include "python/src/errors.hpp"

#include <array>
#include <cctype>
#include <set>
#include <string_view>

#include "messages/error.hpp"

namespace py = pybind11;

namespace darcy::python {

namespace {

constexpr size_t codes = std::size(detail::errc_table);

/// darcy.Error and the class of each code (index 0 unused), alive as long as the process.
PyObject* error_class = nullptr;
std::array<PyObject*, codes> code_classes{};

/// "dimension_mismatch" -> "DimensionMismatch".
std::string class_name(std::string_view id) {
  std::string name;
  bool upper = true;
  for (char c : id) {
    if (c == '_') {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return name;
}

/// The built-in exception a code's class also derives from, so that `except ValueError` and
/// `except LookupError` catch what they would in any Python library; nullptr for none.
PyObject* builtin_base(std::string_view id) {
  static const std::set<std::string_view> value_errors{"invalid_argument",   "invalid_config",
                                                       "dimension_mismatch", "non_finite",
                                                       "batch_too_large",    "empty_batch"};
  static const std::set<std::string_view> lookup_errors{
    "unknown_service", "unknown_node", "not_found", "unknown_embedding", "unknown_rule"};
  if (value_errors.count(id) > 0)
    return PyExc_ValueError;
  if (lookup_errors.count(id) > 0)
    return PyExc_LookupError;
  if (id == "timeout" || id == "deadline_exceeded")
    return PyExc_TimeoutError;
  return nullptr;
}

} // namespace

void bind_errors(py::module_& m) {
  error_class = PyErr_NewExceptionWithDoc("darcy.Error",
                                          "A failure Darcy reported; `code` names its darcy::errc.",
                                          PyExc_Exception, nullptr);
  PyObject_SetAttrString(error_class, "code", py::str("error").ptr());
  m.attr("Error") = py::handle(error_class);
  for (size_t code = 1; code < codes; ++code) {
    std::string_view id = detail::errc_table[code].id;
    auto name = class_name(id);
    py::tuple bases = builtin_base(id)
                        ? py::make_tuple(py::handle(error_class), py::handle(builtin_base(id)))
                        : py::make_tuple(py::handle(error_class));
    auto* cls = PyErr_NewExceptionWithDoc(("darcy." + name).c_str(), detail::errc_table[code].text,
                                          bases.ptr(), nullptr);
    PyObject_SetAttrString(cls, "code", py::str(std::string{id}).ptr());
    code_classes[code] = cls;
    m.attr(name.c_str()) = py::handle(cls);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const python_error& e) {
      auto code = static_cast<size_t>(e.code());
      PyErr_SetString(code > 0 && code < codes ? code_classes[code] : error_class, e.what());
    }
  });
}

void raise(const caf::error& err) {
  if (err.category() == errc_category)
    throw python_error(static_cast<errc>(err.code()), render(err));
  throw python_error(errc::unavailable, render(err));
}

void raise(errc code, const std::string& context) {
  raise(make_error(code, context));
}

} // namespace darcy::python
