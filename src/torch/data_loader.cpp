#include "gpufeed/torch/data_loader.hpp"

#include <algorithm>
#include <utility>

#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/torch/current_stream.hpp"

namespace gpufeed::torch {

data_loader_options::data_loader_options(std::size_t batch_size) {
  options_.batch_size = batch_size;
  options_.workers = 1;
}

data_loader_options::data_loader_options(::torch::data::DataLoaderOptions const& options)
    : data_loader_options{options.batch_size()} {
  workers(options.workers());
  drop_last(options.drop_last());
  // c10::optional in libtorch 1.13, std::optional in 2.x.
  auto const limit = options.timeout();
  if (limit.has_value()) timeout(std::chrono::milliseconds{*limit});
  // max_jobs bounds libtorch's queue of index batches; gpufeed's ring is prefetch_depth.
}

data_loader_options& data_loader_options::batch_size(std::size_t value) {
  options_.batch_size = value;
  return *this;
}

data_loader_options& data_loader_options::workers(std::size_t value) {
  // Checked by validate() like every loader option; only libtorch's 0 is translated. Values
  // beyond unsigned saturate to its largest, gpufeed::auto_workers.
  options_.workers =
      value == 0 ? 1U : static_cast<unsigned>(std::min<std::size_t>(value, auto_workers));
  return *this;
}

data_loader_options& data_loader_options::drop_last(bool value) {
  options_.last_batch = value ? tail_policy::drop : tail_policy::keep;
  return *this;
}

bool data_loader_options::drop_last() const noexcept {
  return options_.last_batch == tail_policy::drop;
}

data_loader_options& data_loader_options::enforce_ordering(bool /*value*/) {
  return *this;
}

data_loader_options& data_loader_options::timeout(std::optional<std::chrono::milliseconds> value) {
  options_.timeout = value.value_or(std::chrono::milliseconds{0});
  return *this;
}

std::optional<std::chrono::milliseconds> data_loader_options::timeout() const noexcept {
  if (options_.timeout.count() == 0) return std::nullopt;
  return options_.timeout;
}

data_loader_options& data_loader_options::prefetch_depth(std::size_t value) {
  options_.prefetch_depth = value;
  return *this;
}

data_loader_options& data_loader_options::accumulation_steps(std::size_t value) {
  options_.accumulation_steps = value;
  return *this;
}

data_loader_options& data_loader_options::seed(std::uint64_t value) {
  options_.seed = value;
  return *this;
}

data_loader_options& data_loader_options::shuffle(bool value) {
  shuffle_ = value;
  options_.shuffle = value;
  return *this;
}

data_loader_options& data_loader_options::device(int cuda_device) {
  options_.target = placement::cuda;
  options_.device = cuda_device;
  return *this;
}

data_loader_options& data_loader_options::on_error(error_policy value) {
  options_.on_error = value;
  return *this;
}

namespace {
loader_options checked(data_loader_options const& options) {
  if (options.loader().target == placement::cuda) {
    GPUFEED_EXPECTS(detail::torch_has_cuda(),
                    "gpufeed::torch: device() asks for CUDA batches, but this gpufeed::torch was "
                    "built against a libtorch without CUDA (or gpufeed without CUDA); leave "
                    "device() unset and call .to(device) on the tensors, or rebuild against a "
                    "CUDA libtorch");
  }
  return options.loader();
}
}  // namespace

data_loader::data_loader(std::shared_ptr<gpufeed::dataset const> dataset,
                         data_loader_options const& options)
    : loader_{std::move(dataset), checked(options)} {}

std::optional<tensor_batch> data_loader::next() {
  auto const& o = loader_.options();
  auto b = o.target == placement::cuda ? loader_.next(detail::current_stream(o.device.value_or(0)))
                                       : loader_.next();
  if (!b) return std::nullopt;
  return to_tensors(std::move(*b));
}

data_loader::iterator data_loader::begin() {
  if (loader_.state().next_sequence != 0) {
    loader_.set_epoch(loader_.epoch() + 1);  // an epoch left half-way: start the next one
  }
  return iterator{this};
}

}  // namespace gpufeed::torch
