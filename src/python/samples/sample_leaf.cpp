#include "python/samples/sample_leaf.hpp"

#include <cstring>
#include <stdexcept>

#include "python/bindings/python_error.hpp"
#include "python/samples/dtypes.hpp"

namespace gpufeed::python {

namespace {

// A new reference to `object.name(*args)`, or nullptr with the error indicator set.
PyObject* call_method(PyObject* object, char const* name) {
  return PyObject_CallMethod(object, name, nullptr);
}

// Complex numbers are batched as their real and imaginary parts.
std::string complex_hint(bool complex) {
  return complex ? " (a complex field: return torch.view_as_real(x), or numpy's "
                   "np.stack([x.real, x.imag], -1), and view it as complex again after the loader)"
                 : "";
}

[[noreturn]] void refuse(leaf_place const& where, std::string const& what) {
  throw std::invalid_argument{where.text() + " is " + what +
                              "; a sample's leaves must be numbers (bool, int, float), numpy "
                              "arrays or scalars, CPU tensors, str or bytes"};
}

std::string type_name(PyObject* object) {
  return Py_TYPE(object)->tp_name;
}

// Copies an n-dimensional strided block: the innermost run of contiguous bytes at a time.
void copy_strided(std::byte* out, std::byte const* in, std::int64_t const* shape,
                  std::int64_t const* strides, std::size_t rank, std::size_t run) noexcept {
  if (rank == 0) {
    std::memcpy(out, in, run);
    return;
  }
  std::size_t inner = run;
  for (std::size_t d = 1; d < rank; ++d) inner *= static_cast<std::size_t>(shape[d]);
  for (std::int64_t i = 0; i < shape[0]; ++i) {
    copy_strided(out + static_cast<std::size_t>(i) * inner, in + i * strides[0], shape + 1,
                 strides + 1, rank - 1, run);
  }
}

}  // namespace

leaf_view::leaf_view(PyObject* object, leaf_place const& where) {
  if (PyBool_Check(object) || PyLong_Check(object) || PyFloat_Check(object)) {
    from_scalar(object);
    return;
  }
  // Text is a leaf of its own kind (sample_tree, text_table): here only where the first sample had
  // a number or an array in its place.
  if (PyUnicode_Check(object) || PyBytes_Check(object)) {
    refuse(where, "a " + type_name(object) + " where the first sample had a number or an array");
  }
  if (PyByteArray_Check(object)) {
    refuse(where, "a bytearray (return bytes for text, or a numpy uint8 array for data)");
  }
  if (object == Py_None) refuse(where, "None");
  if (PyObject_CheckBuffer(object) != 0) {
    if (from_buffer(object, where)) return;
  }
  // A torch tensor: its numpy() view is the cheapest way in; a tensor that requires grad, a
  // bfloat16 one or a bool one on old torch goes through DLPack after detach().
  if (PyObject_HasAttrString(object, "__dlpack__") != 0) {
    if (PyObject_HasAttrString(object, "numpy") != 0) {
      if (PyObject* array = call_method(object, "numpy"); array != nullptr) {
        keep_ = array;
        if (from_buffer(array, where)) return;
      }
      PyErr_Clear();
    }
    PyObject* device = call_method(object, "__dlpack_device__");
    if (device == nullptr) throw python_error::fetch();
    long const device_type = PyTuple_Check(device) != 0 && PyTuple_Size(device) >= 1
                                 ? PyLong_AsLong(PyTuple_GetItem(device, 0))
                                 : -1;
    Py_DECREF(device);
    if (device_type != dlpack::cpu && device_type != dlpack::cuda_host) {
      refuse(where, "a " + type_name(object) +
                        " in device memory (gpufeed copies batches to the GPU itself: return "
                        "CPU data and pass device='cuda' to the loader)");
    }
    PyObject* source = object;
    PyObject* detached = nullptr;
    if (PyObject_HasAttrString(object, "detach") != 0) {
      detached = call_method(object, "detach");
      if (detached == nullptr) throw python_error::fetch();
      source = detached;
    }
    PyObject* capsule = call_method(source, "__dlpack__");
    Py_XDECREF(detached);
    if (capsule == nullptr) throw python_error::fetch();
    try {
      from_dlpack(capsule, where);
    } catch (...) {
      Py_DECREF(capsule);
      throw;
    }
    Py_DECREF(capsule);
    return;
  }
  refuse(where, "a " + type_name(object));
}

leaf_view::~leaf_view() {
  if (has_buffer_) PyBuffer_Release(&buffer_);
  if (managed_ != nullptr && managed_->deleter != nullptr) managed_->deleter(managed_);
  Py_XDECREF(keep_);
}

void leaf_view::from_scalar(PyObject* object) {
  if (PyBool_Check(object)) {
    type_ = dtype::boolean;
    scalar_[0] = std::byte{static_cast<unsigned char>(object == Py_True)};
  } else if (PyLong_Check(object)) {
    type_ = dtype::i64;  // torch's default collate: Python ints become int64
    long long const value = PyLong_AsLongLong(object);
    if (value == -1 && PyErr_Occurred() != nullptr) throw python_error::fetch();
    std::memcpy(scalar_.data(), &value, sizeof value);
  } else {
    type_ = dtype::f64;  // and floats float64
    double const value = PyFloat_AsDouble(object);
    std::memcpy(scalar_.data(), &value, sizeof value);
  }
  rank_ = 0;
  data_ = scalar_.data();
}

bool leaf_view::from_buffer(PyObject* object, leaf_place const& where) {
  if (PyObject_GetBuffer(object, &buffer_, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    return false;
  }
  has_buffer_ = true;
  auto const type = from_buffer_format(buffer_.format != nullptr ? buffer_.format : "B",
                                       static_cast<std::size_t>(buffer_.itemsize));
  if (!type) {
    std::string const format = buffer_.format ? buffer_.format : "?";
    refuse(where, "an array of format '" + format + "' (" + std::to_string(buffer_.itemsize) +
                      " bytes per element), which gpufeed cannot batch; use bool, (u)int8, "
                      "uint16, int16/32/64, float16/32/64" +
                      complex_hint(format.find('Z') != std::string::npos));
  }
  if (static_cast<std::size_t>(buffer_.ndim) > max_field_dims) {
    refuse(where, "an array of " + std::to_string(buffer_.ndim) + " dimensions (at most " +
                      std::to_string(max_field_dims) + ")");
  }
  type_ = *type;
  rank_ = static_cast<std::size_t>(buffer_.ndim);
  for (std::size_t d = 0; d < rank_; ++d) {
    shape_[d] = buffer_.shape[d];
    strides_[d] = buffer_.strides != nullptr ? buffer_.strides[d] : 0;
  }
  if (buffer_.strides == nullptr) {  // C-contiguous
    std::int64_t step = buffer_.itemsize;
    for (std::size_t d = rank_; d-- > 0;) {
      strides_[d] = step;
      step *= shape_[d];
    }
  }
  data_ = static_cast<std::byte const*>(buffer_.buf);
  return true;
}

void leaf_view::from_dlpack(PyObject* capsule, leaf_place const& where) {
  auto* managed =
      static_cast<dlpack::managed_tensor*>(PyCapsule_GetPointer(capsule, dlpack::legacy_capsule));
  if (managed == nullptr) throw python_error::fetch();
  // Ours now: the capsule must not free it too.
  if (PyCapsule_SetName(capsule, dlpack::legacy_used) != 0) throw python_error::fetch();
  managed_ = managed;
  auto const& t = managed->dl_tensor;
  auto const type = python::from_dlpack(t.dtype);
  if (!type) {
    refuse(where, "a tensor of DLPack type code " + std::to_string(t.dtype.code) + " with " +
                      std::to_string(t.dtype.bits) + " bits, which gpufeed cannot batch" +
                      complex_hint(t.dtype.code == dlpack::complex_number));
  }
  if (t.ndim < 0 || static_cast<std::size_t>(t.ndim) > max_field_dims) {
    refuse(where, "a tensor of " + std::to_string(t.ndim) + " dimensions (at most " +
                      std::to_string(max_field_dims) + ")");
  }
  type_ = *type;
  rank_ = static_cast<std::size_t>(t.ndim);
  auto const item = static_cast<std::int64_t>(size_of(type_));
  std::int64_t step = item;
  for (std::size_t d = rank_; d-- > 0;) {
    shape_[d] = t.shape[d];
    strides_[d] = t.strides != nullptr ? t.strides[d] * item : step;
    step *= t.shape[d];
  }
  data_ = static_cast<std::byte const*>(t.data) + t.byte_offset;
}

std::size_t leaf_view::bytes() const noexcept {
  std::size_t n = size_of(type_);
  for (std::size_t d = 0; d < rank_; ++d) n *= static_cast<std::size_t>(shape_[d]);
  return n;
}

void leaf_view::copy_to(std::byte* out) const noexcept {
  // The innermost dimensions that are contiguous in the source are copied as one run.
  std::size_t run = size_of(type_);
  std::size_t rank = rank_;
  while (rank > 0 && strides_[rank - 1] == static_cast<std::int64_t>(run)) {
    run *= static_cast<std::size_t>(shape_[rank - 1]);
    --rank;
  }
  for (std::size_t d = 0; d < rank; ++d) {
    if (shape_[d] == 0) return;
  }
  copy_strided(out, data_, shape_.data(), strides_.data(), rank, run);
}

}  // namespace gpufeed::python
