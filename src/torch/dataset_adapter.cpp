#include "gpufeed/torch/dataset_adapter.hpp"

#include <algorithm>
#include <string>

#include "gpufeed/torch/tensors.hpp"

namespace gpufeed::torch::detail {
namespace {

// gpufeed::shape_text for a torch shape.
std::string shape_text(::torch::IntArrayRef shape) {
  return gpufeed::shape_text(std::span<std::int64_t const>{shape.data(), shape.size()});
}

void add_field(sample_spec& spec, char const* name, ::torch::Tensor const& t, std::size_t index) {
  GPUFEED_EXPECTS(t.defined(), "gpufeed::torch: example " + std::to_string(index) +
                                   " has an undefined '" + name + "' tensor");
  auto const sizes = t.sizes();
  spec.add(name, from_torch_dtype(t.scalar_type()), {sizes.begin(), sizes.end()});
}

void copy_field(::torch::Tensor const& t, field const& want, sample_view const& out, std::size_t f,
                std::size_t index) {
  GPUFEED_EXPECTS(t.defined(), "gpufeed::torch: example " + std::to_string(index) + " has no '" +
                                   want.name + "' tensor, but the first example read had one");
  GPUFEED_EXPECTS(t.device().is_cpu(),
                  "gpufeed::torch: example " + std::to_string(index) + "'s '" + want.name +
                      "' tensor is on " + t.device().str() +
                      "; get() must return CPU tensors (gpufeed copies batches to the GPU)");
  GPUFEED_EXPECTS(from_torch_dtype(t.scalar_type()) == want.type,
                  "gpufeed::torch: example " + std::to_string(index) + "'s '" + want.name +
                      "' tensor is " + std::string{c10::toString(t.scalar_type())} +
                      " but the first example read had " + std::string{to_string(want.type)} +
                      "; return one dtype from get()");
  auto const sizes = t.sizes();
  GPUFEED_EXPECTS(std::equal(sizes.begin(), sizes.end(), want.shape.begin(), want.shape.end()),
                  "gpufeed::torch: example " + std::to_string(index) + "'s '" + want.name +
                      "' tensor has shape " + shape_text(sizes) +
                      " but the first example read had " + shape_text(want.shape) +
                      "; batches need one shape: resize or crop in get() (or in a transform)");
  // One strided copy straight into the slot, whatever the tensor's strides (a permuted or
  // sliced view included): no contiguous() copy first.
  auto bytes = out.bytes(f);
  ::torch::from_blob(bytes.data(), sizes,
                     ::torch::TensorOptions{}.dtype(t.scalar_type()).device(::torch::kCPU))
      .copy_(t);
}

}  // namespace

sample_spec spec_of(example_tensors const& example, std::size_t index) {
  sample_spec spec;
  add_field(spec, "data", example.data, index);
  if (example.target.defined()) add_field(spec, "target", example.target, index);
  return spec;
}

sample_spec ticket_spec() {
  return sample_spec{}.add("ticket", dtype::i64, {});
}

std::string slow_path_note(std::string const& example, bool tensors) {
  return "gpufeed::torch: the slow path, for " +
         (tensors ? "batch transforms that take whole batches of " + example
                  : "examples of type " + example + ", which are not tensors gpufeed can copy") +
         ": the workers read each example, and the thread that asks for a batch collects them "
         "into a std::vector and makes the batch with libtorch's own transforms. Tensor "
         "examples (torch::data::Example<>, TensorExample) with no batch transform but a final "
         "Stack<> are copied straight into the batch instead (docs/torch.md, \"The slow path\")";
}

void copy_example(example_tensors const& example, sample_view out, std::size_t index) {
  ::torch::NoGradGuard const no_grad;  // a tensor that requires grad is copied as plain values
  auto const& spec = out.spec();
  copy_field(example.data, spec[0], out, 0, index);
  if (spec.size() > 1) copy_field(example.target, spec[1], out, 1, index);
}

}  // namespace gpufeed::torch::detail
