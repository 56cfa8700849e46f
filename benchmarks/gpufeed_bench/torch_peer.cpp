#include "torch_peer.hpp"

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <utility>
#include <vector>

#include "gpufeed/sample_layout.hpp"
#include "gpufeed/torch/tensors.hpp"

namespace gpufeed::bench {
// libtorch's namespace: inside gpufeed, a plain `torch` would name gpufeed::torch.
namespace torch = ::torch;
namespace {

// gpufeed::torch's dtype map, but for uint16, which the bench reads as int16 (the same bytes;
// libtorch before 2.3 has no uint16 tensors).
torch::Dtype to_torch(gpufeed::dtype type) {
  return type == gpufeed::dtype::u16 ? torch::kInt16 : gpufeed::torch::to_torch_dtype(type);
}

// libtorch's workers are threads with no index of their own; datasets that keep per-worker state
// (the HDF5 dataset) get a stable one per thread.
unsigned this_thread_worker(unsigned workers) {
  static std::atomic<unsigned> next{0};
  thread_local unsigned const id = next.fetch_add(1);
  return id % (workers == 0 ? 1U : workers);
}

// A libtorch dataset as its users write one: get(i) allocates the sample's tensors and fills them.
class source_dataset : public torch::data::datasets::Dataset<source_dataset> {
 public:
  source_dataset(std::shared_ptr<gpufeed::dataset const> data, bool image_to_float,
                 unsigned workers)
      : data_{std::move(data)},
        layout_{data_->spec(), 1},
        image_to_float_{image_to_float},
        workers_{workers} {}

  torch::data::Example<> get(size_t index) override {
    auto const& spec = layout_.spec();
    std::vector<torch::Tensor> fields;
    fields.reserve(spec.size());
    // One allocation for the sample; each field a typed view of its aligned region.
    torch::Tensor raw = torch::empty({static_cast<std::int64_t>(layout_.bytes())}, torch::kUInt8);
    auto* const base = reinterpret_cast<std::byte*>(raw.data_ptr<std::uint8_t>());
    gpufeed::read_context ctx;
    ctx.index = index;
    ctx.seed = index;
    ctx.worker = this_thread_worker(workers_);
    data_->read(index, layout_.view(base, 0), ctx);
    for (std::size_t f = 0; f < spec.size(); ++f) {
      auto const& field = spec[f];
      std::vector<std::int64_t> const shape(field.shape.begin(), field.shape.end());
      fields.push_back(raw.narrow(0, static_cast<std::int64_t>(layout_.field_offset(f)),
                                  static_cast<std::int64_t>(layout_.field_bytes(f)))
                           .view(to_torch(field.type))
                           .view(shape));
    }
    torch::Tensor data = fields[0];
    if (image_to_float_) data = data.permute({2, 0, 1}).to(torch::kFloat).div_(255.0);
    torch::Tensor target = fields.size() > 1 ? fields[1] : torch::Tensor{};
    if (!target.defined()) target = torch::zeros({}, torch::kInt64);
    return {data, target};
  }

  torch::optional<size_t> size() const override { return data_->size(); }

 private:
  std::shared_ptr<gpufeed::dataset const> data_;
  gpufeed::sample_layout layout_;
  bool image_to_float_;
  unsigned workers_;
};

// An in-memory libtorch dataset as its users write one (torchvision's MNIST): whole tensors,
// get(i) returns row i of each (views), Stack copies them into the batch.
class tensor_dataset : public torch::data::datasets::Dataset<tensor_dataset> {
 public:
  tensor_dataset(torch::Tensor data, torch::Tensor target)
      : data_{std::move(data)}, target_{std::move(target)} {}
  torch::data::Example<> get(size_t index) override {
    auto const i = static_cast<std::int64_t>(index);
    return {data_[i], target_[i]};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(data_.size(0)); }

 private:
  torch::Tensor data_;
  torch::Tensor target_;
};

torch::Tensor column_tensor(gpufeed::field const& field, std::span<std::byte const> rows,
                            std::size_t samples) {
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(samples)};
  shape.insert(shape.end(), field.shape.begin(), field.shape.end());
  // Read-only use: the loader only copies out of it.
  return torch::from_blob(const_cast<std::byte*>(rows.data()), shape, to_torch(field.type));
}

template <class Loader>
peer_run time_loader(Loader& loader, torch_cpp_config const& config) {
  peer_run run;
  std::uint64_t epochs = 1;
  auto it = loader.begin();
  // Takes `count` batches, starting a new epoch (a new iterator) whenever one ends.
  auto const take = [&](std::size_t count, bool counted) {
    for (std::size_t b = 0; b < count; ++b) {
      if (it == loader.end()) {
        it = loader.begin();
        ++epochs;
        if (it == loader.end()) throw std::runtime_error{"libtorch's loader gave an empty epoch"};
      }
      auto const samples = static_cast<std::uint64_t>((*it).data.size(0));
      if (counted) {
        run.samples += samples;
        ++run.batches;
      }
      ++it;
    }
  };
  take(config.warmup, false);
  auto const start = std::chrono::steady_clock::now();
  take(config.batches, true);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.details = {{"epochs_started", epochs}};
  return run;
}

}  // namespace

peer_run run_torch_cpp(torch_cpp_config const& config) {
  auto const spec = config.data->spec();
  if (spec.size() > 2) {
    throw std::invalid_argument{"the dataset has " + std::to_string(spec.size()) +
                                " fields; torch::data::Example<> holds two (data, target)"};
  }
  auto const options =
      torch::data::DataLoaderOptions().batch_size(config.batch_size).workers(config.workers);
  peer_run run;
  if (!config.columns.empty()) {
    auto const samples = config.data->size();
    auto data = column_tensor(spec[0], config.columns[0], samples);
    auto target = config.columns.size() > 1
                      ? column_tensor(spec[1], config.columns[1], samples)
                      : torch::zeros({static_cast<std::int64_t>(samples)}, torch::kInt64);
    auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        tensor_dataset{data, target}.map(torch::data::transforms::Stack<>()), options);
    run = time_loader(*loader, config);
    run.details["dataset"] = "tensor views (MNIST style)";
  } else {
    auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        source_dataset{config.data, config.image_to_float, config.workers}.map(
            torch::data::transforms::Stack<>()),
        options);
    run = time_loader(*loader, config);
    run.details["dataset"] = "get() reads into fresh tensors";
  }
  run.bytes = run.samples * spec.bytes_per_sample();
  run.details["torch_version"] = torch_cpp_version();
  run.details["intra_op_threads"] = torch::get_num_threads();
  return run;
}

std::string torch_cpp_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace gpufeed::bench
