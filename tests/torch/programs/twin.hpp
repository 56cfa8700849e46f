#pragma once
// The one difference between the two builds of each program in this folder: the include and the
// namespace `make_data_loader` comes from. GPUFEED_TWIN_FEED=1 builds it against gpufeed::torch,
// otherwise against libtorch's own torch::data. Everything else a program writes is libtorch's
// (datasets, samplers, transforms, DataLoaderOptions, the loop).
//
// Also the printer both builds share: one line per batch (its size, dtypes and shapes) and one
// per sample (its values), which tests/torch/programs/compare_twins.py compares.

#if GPUFEED_TWIN_FEED
#include <gpufeed/torch.hpp>
namespace feed = gpufeed::torch;
#else
#include <torch/torch.h>
namespace feed = torch::data;
#endif

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace twin {

inline std::string values(torch::Tensor const& t) {
  auto const flat = t.contiguous().to(torch::kDouble).flatten();
  auto const n = flat.numel();
  auto const* v = flat.data_ptr<double>();
  std::string out;
  char text[32];
  for (std::int64_t i = 0; i < n; ++i) {
    std::snprintf(text, sizeof text, "%s%.6g", i ? " " : "", v[i]);
    out += text;
  }
  return out;
}

inline std::string describe(torch::Tensor const& t) {
  std::ostringstream out;
  out << c10::toString(t.scalar_type()) << t.sizes();
  return out.str();
}

// The target of an example or a stacked batch, undefined where there is none.
template <class E>
torch::Tensor target_of(E const& e) {
  if constexpr (requires { e.target; }) {
    return e.target;
  } else {
    return {};
  }
}

// A stacked batch (torch::data::Example<>, TensorExample, gpufeed's tensor_batch) or a vector of
// examples (a dataset not mapped through Stack<>).
template <class Batch>
void print_batch(Batch const& batch) {
  if constexpr (requires { batch.front().data; }) {
    std::cout << "batch examples=" << batch.size();
    if (!batch.empty()) {
      std::cout << " data=" << describe(batch.front().data);
      auto const t = target_of(batch.front());
      if (t.defined()) std::cout << " target=" << describe(t);
    }
    std::cout << "\n";
    for (auto const& example : batch) {
      auto const t = target_of(example);
      std::cout << "sample " << values(example.data) << (t.defined() ? " | " + values(t) : "")
                << "\n";
    }
  } else {
    auto const t = target_of(batch);
    std::cout << "batch size=" << batch.data.size(0) << " data=" << describe(batch.data);
    if (t.defined()) std::cout << " target=" << describe(t);
    std::cout << "\n";
    for (std::int64_t i = 0; i < batch.data.size(0); ++i) {
      std::cout << "sample " << values(batch.data[i]) << (t.defined() ? " | " + values(t[i]) : "")
                << "\n";
    }
  }
}

inline void print_epoch(std::size_t epoch) {
  std::cout << "epoch " << epoch << "\n";
}

}  // namespace twin
