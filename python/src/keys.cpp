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

} // namespace

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
