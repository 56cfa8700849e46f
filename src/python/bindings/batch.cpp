#include "python/bindings/batch.hpp"

#include <pybind11/stl.h>

#include <array>
#include <string>

#include "gpufeed/error.hpp"
#include "gpufeed/stream_view.hpp"
#include "python/bindings/dlpack_abi.hpp"
#include "python/samples/dtypes.hpp"

namespace gpufeed::python {

namespace {

// What one exported tensor owns: the lease, its shape and strides, and the DLPack struct
// handed to the consumer (one of the two forms).
struct export_context {
  std::shared_ptr<batch_lease> lease;
  std::array<std::int64_t, max_field_dims + 1> shape{};
  std::array<std::int64_t, max_field_dims + 1> strides{};
  dlpack::managed_tensor legacy{};
  dlpack::managed_tensor_versioned versioned{};
};

void delete_legacy(dlpack::managed_tensor* self) {
  delete static_cast<export_context*>(self->manager_ctx);
}

void delete_versioned(dlpack::managed_tensor_versioned* self) {
  delete static_cast<export_context*>(self->manager_ctx);
}

// A capsule no consumer took still owns its tensor.
void legacy_capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, dlpack::legacy_capsule) == 0) return;
  auto* t =
      static_cast<dlpack::managed_tensor*>(PyCapsule_GetPointer(capsule, dlpack::legacy_capsule));
  if (t != nullptr && t->deleter != nullptr) t->deleter(t);
}

void versioned_capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, dlpack::versioned_capsule) == 0) return;
  auto* t = static_cast<dlpack::managed_tensor_versioned*>(
      PyCapsule_GetPointer(capsule, dlpack::versioned_capsule));
  if (t != nullptr && t->deleter != nullptr) t->deleter(t);
}

char const* typestr_of(dtype type) {
  switch (type) {
    case dtype::u8:
      return "|u1";
    case dtype::i8:
      return "|i1";
    case dtype::u16:
      return "<u2";
    case dtype::i16:
      return "<i2";
    case dtype::i32:
      return "<i4";
    case dtype::i64:
      return "<i8";
    case dtype::f16:
      return "<f2";
    case dtype::f32:
      return "<f4";
    case dtype::f64:
      return "<f8";
    case dtype::boolean:
      return "|b1";
    case dtype::bf16:
      break;
  }
  return nullptr;  // no array-interface type for bfloat16
}

[[noreturn]] void buffer_error(std::string const& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw py::error_already_set();
}

// One field of a batch as an exporter of its memory.
class field {
 public:
  field(std::shared_ptr<batch_lease> lease, tensor_view view, std::optional<dtype> as = {})
      : lease_{std::move(lease)}, view_{view}, type_{as.value_or(view.type())} {}

  [[nodiscard]] std::string name() const { return std::string{view_.name()}; }
  [[nodiscard]] std::string type_name() const { return std::string{to_string(type_)}; }
  [[nodiscard]] py::tuple shape() const {
    py::tuple t(view_.rank());
    for (std::size_t d = 0; d < view_.rank(); ++d) t[d] = view_.shape()[d];
    return t;
  }
  [[nodiscard]] bool on_device() const noexcept { return view_.device() >= 0; }

  [[nodiscard]] py::tuple dlpack_device() const {
    if (on_device()) return py::make_tuple(static_cast<int>(dlpack::cuda), view_.device());
    return py::make_tuple(static_cast<int>(dlpack::cpu), 0);
  }

  /// The same memory, typed as uint8 (bool fields, for consumers without DLPack's bool).
  [[nodiscard]] field as_uint8() const {
    if (size_of(type_) != 1) {
      throw logic_error{"as_uint8: field '" + name() + "' is " + type_name() +
                        ", not a one-byte type"};
    }
    return field{lease_, view_, dtype::u8};
  }

  py::object dlpack(py::object const& stream, py::object const& max_version,
                    py::object const& dl_device, py::object const& copy) const {
    if (!copy.is_none() && copy.cast<bool>()) {
      buffer_error(
          "gpufeed exports batches without copying (copy=True was asked); import the "
          "tensor, then copy it");
    }
    if (!dl_device.is_none()) {
      auto const want = dl_device.cast<std::pair<int, int>>();
      auto const have = dlpack_device().cast<std::pair<int, int>>();
      if (want != have) {
        buffer_error("field '" + name() + "' is on DLPack device (" + std::to_string(have.first) +
                     ", " + std::to_string(have.second) + "); gpufeed does not copy it to (" +
                     std::to_string(want.first) + ", " + std::to_string(want.second) + ")");
      }
    }
    if (on_device()) order_after_copy(stream);
    bool const versioned =
        !max_version.is_none() && py::cast<py::tuple>(max_version)[0].cast<int>() >= 1;
    auto context = std::make_unique<export_context>();
    context->lease = lease_;
    std::int64_t step = 1;
    for (std::size_t d = view_.rank(); d-- > 0;) {
      context->shape[d] = view_.shape()[d];
      context->strides[d] = step;
      step *= view_.shape()[d];
    }
    dlpack::tensor t{};
    t.data = view_.data();
    t.dev =
        on_device() ? dlpack::device{dlpack::cuda, view_.device()} : dlpack::device{dlpack::cpu, 0};
    t.ndim = static_cast<std::int32_t>(view_.rank());
    t.dtype = to_dlpack(type_);
    t.shape = context->shape.data();
    t.strides = context->strides.data();
    t.byte_offset = 0;
    auto* raw = context.get();
    PyObject* capsule = nullptr;
    if (versioned) {
      raw->versioned =
          dlpack::managed_tensor_versioned{dlpack::current_version, raw, delete_versioned, 0, t};
      capsule =
          PyCapsule_New(&raw->versioned, dlpack::versioned_capsule, versioned_capsule_destructor);
    } else {
      raw->legacy = dlpack::managed_tensor{t, raw, delete_legacy};
      capsule = PyCapsule_New(&raw->legacy, dlpack::legacy_capsule, legacy_capsule_destructor);
    }
    if (capsule == nullptr) throw py::error_already_set();
    (void)context.release();  // the capsule, then the consumer, owns it
    return py::reinterpret_steal<py::object>(capsule);
  }

  [[nodiscard]] py::dict array_interface(bool cuda) const {
    if (cuda != on_device()) {
      throw py::attribute_error(cuda ? "__cuda_array_interface__: the field is in host memory"
                                     : "__array_interface__: the field is in device memory");
    }
    auto const* typestr = typestr_of(type_);
    if (typestr == nullptr) throw py::attribute_error("bfloat16 has no array-interface type");
    py::dict d;
    d["shape"] = shape();
    d["typestr"] = typestr;
    d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(view_.data()), false);
    d["strides"] = py::none();
    d["version"] = 3;
    if (cuda) {
      // The data is ready on the stream next() handed the batch to.
      if (lease_->consumer_stream) {
        d["stream"] = *lease_->consumer_stream;
      } else {
        d["stream"] = py::none();
      }
    }
    return d;
  }

 private:
  // DLPack's stream contract: `stream` is the consumer's; it must wait for the copy, and the
  // slot's release must follow the work queued on it (batch::use_on does both, host-async).
  void order_after_copy(py::object const& stream) const {
    std::uintptr_t value = 1;  // None: the legacy default stream, as the array API says
    if (!stream.is_none()) {
      auto const given = stream.cast<std::intptr_t>();
      if (given == -1) return;  // the consumer asks for no synchronization
      if (given == 0) {
        buffer_error(
            "stream=0 is ambiguous for CUDA in DLPack; pass 1 for the legacy default "
            "stream, 2 for the per-thread default stream, or a stream handle");
      }
      value = static_cast<std::uintptr_t>(given);
    }
    if (lease_->consumer_stream == value) return;  // next() already made it wait
    auto const view = value == 1 ? stream_view::legacy_default()
                                 : stream_view{reinterpret_cast<stream_view::native_type>(value)};
    lease_->value.use_on(view);
  }

  std::shared_ptr<batch_lease> lease_;
  tensor_view view_;
  dtype type_;
};

py::list fields_of(std::shared_ptr<batch_lease> const& lease, bool host) {
  py::list out;
  for (std::size_t f = 0; f < lease->value.fields(); ++f) {
    out.append(field{lease, host ? lease->value.host_field(f) : lease->value.field(f)});
  }
  return out;
}

}  // namespace

batch_lease::~batch_lease() {
  if (!owner.here()) {
    static_cast<void>(new batch{std::move(value)});  // left to the parent's loader
  }
}

py::object export_host_bytes(std::shared_ptr<batch_lease> lease, std::byte* data,
                             std::size_t bytes) {
  return py::cast(field{std::move(lease), tensor_view{"collated", dtype::u8, data, bytes, {}, -1}});
}

py::object wrap_batch(batch&& b, std::optional<std::uintptr_t> consumer_stream) {
  return py::cast(std::make_shared<batch_lease>(std::move(b), consumer_stream));
}

void bind_batch(py::module_& m) {
  py::class_<field>(m, "Field",
                    "One field of a batch: exports its memory by DLPack (torch.from_dlpack, "
                    "numpy.from_dlpack) without a copy. Keeps the batch's slot leased while it "
                    "or any tensor made from it is alive.")
      .def_property_readonly("name", &field::name)
      .def_property_readonly("dtype", &field::type_name)
      .def_property_readonly("shape", &field::shape)
      .def("__dlpack__", &field::dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__", &field::dlpack_device)
      .def("as_uint8", &field::as_uint8,
           "The same memory typed uint8: for bool fields and consumers without DLPack's bool "
           "(torch before 2.0).")
      .def_property_readonly("__array_interface__",
                             [](field const& f) { return f.array_interface(false); })
      .def_property_readonly("__cuda_array_interface__",
                             [](field const& f) { return f.array_interface(true); });

  py::class_<batch_lease, std::shared_ptr<batch_lease>>(
      m, "Batch", "A lease on one slot of the ring; see gpufeed.DataLoader for the usual way in.")
      .def("fields", [](std::shared_ptr<batch_lease> const& l) { return fields_of(l, false); })
      .def("host_fields", [](std::shared_ptr<batch_lease> const& l) { return fields_of(l, true); })
      .def_property_readonly("size", [](batch_lease const& l) { return l.value.size(); })
      .def_property_readonly("sequence", [](batch_lease const& l) { return l.value.sequence(); })
      .def_property_readonly("epoch", [](batch_lease const& l) { return l.value.epoch(); })
      .def_property_readonly("step",
                             [](batch_lease const& l) {
                               auto const s = l.value.step();
                               return py::make_tuple(s.step, s.micro, s.micros_in_step,
                                                     s.samples_in_step, s.last_micro, s.short_step);
                             })
      .def_property_readonly("indices",
                             [](batch_lease const& l) {
                               auto const i = l.value.indices();
                               return std::vector<std::size_t>{i.begin(), i.end()};
                             })
      .def_property_readonly("skipped", [](batch_lease const& l) {
        auto const i = l.value.skipped();
        return std::vector<std::size_t>{i.begin(), i.end()};
      });
}

}  // namespace gpufeed::python
