#include "python/src/keys.hpp"

#include <string>
#include <string_view>

#include <pybind11/numpy.h>

#include "ops/distinct_keys.hpp"
#include "python/src/errors.hpp"

namespace py = pybind11;

namespace darcy::python {

namespace {

template <class T>
void add_ids(const py::array& array, ops::distinct_keys& d, std::vector<int64_t>& inverse) {
  auto ids = py::array_t<T, py::array::forcecast>::ensure(array);
  auto view = ids.template unchecked<1>();
  for (py::ssize_t i = 0; i < view.shape(0); ++i) {
    if constexpr (std::is_signed_v<T>)
      if (view(i) < 0)
        raise(errc::invalid_argument, "key " + std::to_string(i) + " is the negative id " +
                                        std::to_string(view(i)) + "; ids are 0 or more");
    inverse.push_back(d.add_id(static_cast<uint64_t>(view(i))));
  }
}

void read_ids(const py::array& array, ops::distinct_keys& d, std::vector<int64_t>& inverse) {
  auto dtype = array.dtype();
  if (array.ndim() != 1)
    raise(errc::invalid_argument, "an id array of " + std::to_string(array.ndim()) +
                                    " dimensions; keys are one id per row (flatten it)");
  auto kind = dtype.kind();
  if (kind != 'i' && kind != 'u')
    raise(errc::invalid_argument, "an id array of dtype " + std::string{py::str(dtype)} +
                                    "; ids are integers (int64 or uint64)");
  d.clear(static_cast<size_t>(array.size()));
  inverse.reserve(static_cast<size_t>(array.size()));
  if (kind == 'u')
    add_ids<uint64_t>(array, d, inverse);
  else
    add_ids<int64_t>(array, d, inverse);
}

std::string_view text_of(const py::handle& key, size_t i) {
  Py_ssize_t size = 0;
  if (PyUnicode_Check(key.ptr())) {
    const char* data = PyUnicode_AsUTF8AndSize(key.ptr(), &size);
    if (data == nullptr) {
      PyErr_Clear();
      raise(errc::invalid_argument, "key " + std::to_string(i) + " is not valid UTF-8");
    }
    return {data, static_cast<size_t>(size)};
  }
  if (PyBytes_Check(key.ptr())) {
    char* data = nullptr;
    PyBytes_AsStringAndSize(key.ptr(), &data, &size);
    return {data, static_cast<size_t>(size)};
  }
  raise(errc::invalid_argument, "key " + std::to_string(i) + " is a " +
                                  std::string{py::str(key.get_type().attr("__name__"))} +
                                  "; keys are str or bytes, or a NumPy array of integer ids");
}

/// Appends the ids of `flat` (1-D), `cols` a row, to `out` as keys, refusing a negative id.
template <class T>
void add_positive_ids(const py::array& flat, size_t cols,
                      std::vector<std::vector<std::string>>& out) {
  auto ids = py::array_t<T, py::array::forcecast>::ensure(flat);
  auto view = ids.template unchecked<1>();
  for (py::ssize_t i = 0; i < view.shape(0); ++i) {
    auto row = static_cast<size_t>(i) / cols;
    if constexpr (std::is_signed_v<T>)
      if (view(i) < 0)
        raise(errc::invalid_argument, "example " + std::to_string(row) + " has the negative id " +
                                        std::to_string(view(i)) + "; ids are 0 or more");
    out[row].push_back(std::to_string(view(i)));
  }
}

/// `array`'s ids (an integer array of 1 or 2 dimensions) as keys: one key a row for 1-D, a row
/// of keys a row for 2-D.
std::vector<std::vector<std::string>> positive_ids(const py::array& array) {
  auto kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u')
    raise(errc::invalid_argument, "positive keys of dtype " + std::string{py::str(array.dtype())} +
                                    "; ids are integers (int64 or uint64)");
  if (array.ndim() != 1 && array.ndim() != 2)
    raise(errc::invalid_argument, "a positive-id array of " + std::to_string(array.ndim()) +
                                    " dimensions; one id an example (1-D) or a row of ids an "
                                    "example (2-D)");
  auto rows = static_cast<size_t>(array.shape(0));
  auto cols = array.ndim() == 2 ? static_cast<size_t>(array.shape(1)) : size_t{1};
  if (cols == 0 && rows > 0)
    raise(errc::invalid_argument, "example 0 has no positive key");
  std::vector<std::vector<std::string>> out(rows);
  auto flat = py::reinterpret_borrow<py::array>(array.attr("reshape")(-1));
  if (kind == 'u')
    add_positive_ids<uint64_t>(flat, cols, out);
  else
    add_positive_ids<int64_t>(flat, cols, out);
  return out;
}

/// One example's keys: a str or bytes key, or a list, tuple or 1-D integer array of them.
std::vector<std::string> example_keys(const py::handle& entry, size_t example) {
  auto where = "example " + std::to_string(example);
  if (PyUnicode_Check(entry.ptr()) || PyBytes_Check(entry.ptr()))
    return {std::string{text_of(entry, 0)}};
  std::vector<std::string> keys;
  if (py::isinstance<py::array>(entry)) {
    auto array = py::reinterpret_borrow<py::array>(entry);
    if (array.ndim() != 1)
      raise(errc::invalid_argument, where + ": an id array of " + std::to_string(array.ndim()) +
                                      " dimensions; an example's ids are 1-D");
    for (auto& row : positive_ids(array))
      keys.push_back(std::move(row.at(0)));
  } else if (PyList_Check(entry.ptr()) || PyTuple_Check(entry.ptr())) {
    auto n = static_cast<size_t>(PySequence_Fast_GET_SIZE(entry.ptr()));
    PyObject** items = PySequence_Fast_ITEMS(entry.ptr());
    for (size_t i = 0; i < n; ++i) {
      if (!PyUnicode_Check(items[i]) && !PyBytes_Check(items[i]))
        raise(errc::invalid_argument,
              where + ": key " + std::to_string(i) + " is a " +
                std::string{py::str(py::handle{items[i]}.get_type().attr("__name__"))} +
                "; keys are str or bytes, or a NumPy array of integer ids");
      keys.emplace_back(text_of(items[i], i));
    }
  } else {
    raise(errc::invalid_argument,
          where + " is a " + std::string{py::str(entry.get_type().attr("__name__"))} +
            "; an example's positives are a str or bytes key, a list of them, or a NumPy "
            "array of integer ids");
  }
  if (keys.empty())
    raise(errc::invalid_argument, where + " has no positive key");
  return keys;
}

} // namespace

std::vector<std::vector<std::string>> read_positive_keys(const py::handle& positives) {
  std::vector<std::vector<std::string>> out;
  if (py::isinstance<py::array>(positives)) {
    out = positive_ids(py::reinterpret_borrow<py::array>(positives));
  } else if (PyList_Check(positives.ptr()) || PyTuple_Check(positives.ptr())) {
    auto n = static_cast<size_t>(PySequence_Fast_GET_SIZE(positives.ptr()));
    PyObject** items = PySequence_Fast_ITEMS(positives.ptr());
    out.reserve(n);
    for (size_t b = 0; b < n; ++b)
      out.push_back(example_keys(items[b], b));
  } else {
    raise(errc::invalid_argument,
          "positive keys of type " + std::string{py::str(positives.get_type().attr("__name__"))} +
            "; a list with each example's keys, or a NumPy array of integer ids (1-D: one an "
            "example)");
  }
  if (out.empty())
    raise(errc::empty_batch, "no example's positive keys given");
  return out;
}

python_keys read_keys(const py::handle& keys) {
  python_keys result;
  ops::distinct_keys d;
  if (py::isinstance<py::array>(keys)) {
    read_ids(py::reinterpret_borrow<py::array>(keys), d, result.inverse);
  } else if (PyList_Check(keys.ptr()) || PyTuple_Check(keys.ptr())) {
    // Borrowed items of the list or tuple itself: no reference is taken a key.
    auto n = static_cast<size_t>(PySequence_Fast_GET_SIZE(keys.ptr()));
    PyObject** items = PySequence_Fast_ITEMS(keys.ptr());
    d.clear(n);
    result.inverse.reserve(n);
    for (size_t i = 0; i < n; ++i)
      result.inverse.push_back(d.add(text_of(items[i], i)));
  } else if (PyUnicode_Check(keys.ptr()) || PyBytes_Check(keys.ptr())) {
    raise(errc::invalid_argument, "keys are a list of keys, not one key (write [key])");
  } else {
    raise(errc::invalid_argument,
          "keys of type " + std::string{py::str(keys.get_type().attr("__name__"))} +
            "; keys are a list or tuple of str or bytes, or a NumPy array of integer ids");
  }
  if (result.inverse.empty())
    raise(errc::empty_batch, "no key given");
  result.distinct = d.take();
  return result;
}

} // namespace darcy::python
