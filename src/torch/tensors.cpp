#include "gpufeed/torch/tensors.hpp"

#include <memory>
#include <utility>

#include "gpufeed/error.hpp"
#include "gpufeed/tensor_view.hpp"
#include "gpufeed/torch/current_stream.hpp"

namespace gpufeed::torch {

::torch::Dtype to_torch_dtype(dtype type) {
  switch (type) {
    case dtype::u8:
      return ::torch::kUInt8;
    case dtype::i8:
      return ::torch::kInt8;
    case dtype::u16:
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
      return ::torch::kUInt16;
#else
      throw logic_error{"gpufeed::torch: libtorch " TORCH_VERSION
                        " has no uint16 tensors; store the field as int32 (or int16 if the values "
                        "fit) in the dataset"};
#endif
    case dtype::i16:
      return ::torch::kInt16;
    case dtype::i32:
      return ::torch::kInt32;
    case dtype::i64:
      return ::torch::kInt64;
    case dtype::f16:
      return ::torch::kHalf;
    case dtype::bf16:
      return ::torch::kBFloat16;
    case dtype::f32:
      return ::torch::kFloat;
    case dtype::f64:
      return ::torch::kDouble;
    case dtype::boolean:
      return ::torch::kBool;
  }
  throw logic_error{"gpufeed::torch: unknown dtype"};
}

dtype from_torch_dtype(::torch::Dtype type) {
  switch (type) {
    case ::torch::kUInt8:
      return dtype::u8;
    case ::torch::kBool:
      return dtype::boolean;
    case ::torch::kInt8:
      return dtype::i8;
    case ::torch::kInt16:
      return dtype::i16;
    case ::torch::kInt32:
      return dtype::i32;
    case ::torch::kInt64:
      return dtype::i64;
    case ::torch::kHalf:
      return dtype::f16;
    case ::torch::kBFloat16:
      return dtype::bf16;
    case ::torch::kFloat:
      return dtype::f32;
    case ::torch::kDouble:
      return dtype::f64;
    default:
      break;
  }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  if (type == ::torch::kUInt16) return dtype::u16;
#endif
  throw logic_error{std::string{"gpufeed::torch: tensors of type "} +
                    std::string{c10::toString(type)} +
                    " cannot go through gpufeed; convert them to a real or integer type in get()"};
}

::torch::Tensor const& tensor_batch::operator[](std::string_view name) const {
  for (std::size_t f = 0; f < names.size(); ++f) {
    if (names[f] == name) return fields[f];
  }
  std::string known;
  for (auto const& n : names) known += (known.empty() ? "" : ", ") + n;
  throw logic_error{"gpufeed::torch: the batch has no field '" + std::string{name} +
                    "'; its fields are: " + known};
}

namespace {
// Declares that `stream_of(device)` reads the batch behind `lease` (batch::use_on), where the
// batch is in device memory. The device is the lease's own, not guessed from the tensors a
// caller may have replaced or moved.
template <class StreamOf>
void declare_use(std::weak_ptr<batch> const& lease, StreamOf const& stream_of) {
  auto const held = lease.lock();
  GPUFEED_EXPECTS(held != nullptr,
                  "gpufeed::torch: use_on on a batch whose tensors are all gone (the slot is back "
                  "in the ring); declare the stream while the batch's tensors are alive");
  auto const device = held->fields() == 0 ? -1 : held->field(0).device();
  if (device < 0) return;  // host memory: no stream reads it before the slot is refilled
  held->use_on(stream_of(device));
}
}  // namespace

void tensor_batch::use_on(::c10::Stream stream) const {
  declare_use(lease_, [&](int device) { return detail::cuda_stream_of(stream, device); });
}

void tensor_batch::use_on_current_stream() const {
  declare_use(lease_, [](int device) { return detail::current_stream(device); });
}

tensor_batch to_tensors(batch&& b) {
  GPUFEED_EXPECTS(static_cast<bool>(b),
                  "gpufeed::torch::to_tensors: the batch is empty (moved "
                  "from or released)");
  // One lease shared by every tensor of the batch: the slot goes back when the last one dies.
  auto lease = std::make_shared<batch>(std::move(b));
  tensor_batch out;
  out.lease_ = lease;
  out.step = lease->step();
  out.epoch = lease->epoch();
  out.sequence = lease->sequence();
  out.indices.assign(lease->indices().begin(), lease->indices().end());
  out.skipped.assign(lease->skipped().begin(), lease->skipped().end());
  out.fields.reserve(lease->fields());
  out.names.reserve(lease->fields());
  for (std::size_t f = 0; f < lease->fields(); ++f) {
    tensor_view const view = lease->field(f);
    auto const shape = view.shape();
    auto options = ::torch::TensorOptions{}.dtype(to_torch_dtype(view.type()));
    options = view.device() >= 0
                  ? options.device(::torch::kCUDA, static_cast<c10::DeviceIndex>(view.device()))
                  : options.device(::torch::kCPU);
    out.fields.push_back(::torch::from_blob(
        view.data(), c10::IntArrayRef{shape.data(), shape.size()},
        [lease](void*) mutable { lease.reset(); }, options));
    out.names.emplace_back(view.name());
  }
  if (!out.fields.empty()) out.data = out.fields[0];
  if (out.fields.size() > 1) out.target = out.fields[1];
  return out;
}

}  // namespace gpufeed::torch
