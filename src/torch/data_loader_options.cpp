#include <algorithm>
#include <string>
#include <utility>

#include "gpufeed/torch/data_loader.hpp"

namespace gpufeed::torch {

namespace {
void add_note(std::vector<std::string>& notes, std::string note) {
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(std::move(note));
}
}  // namespace

data_loader_options::data_loader_options(std::size_t batch_size) {
  options_.batch_size = batch_size;
  options_.workers = 1;
}

data_loader_options::data_loader_options(::torch::data::DataLoaderOptions const& options)
    : data_loader_options{options.batch_size()} {
  workers(options.workers());
  if (options.workers() == 0) {
    add_note(notes_,
             "workers(0) (load in the calling thread) runs one worker thread: gpufeed always "
             "prepares batches ahead of the training step");
  }
  // max_jobs bounds libtorch's batches in flight: gpufeed's prefetch depth. Unset, gpufeed's
  // default depth stays (libtorch's 2 x workers would be 0 for workers(0)).
  if (auto const jobs = options.max_jobs(); jobs.has_value()) max_jobs(*jobs);
  drop_last(options.drop_last());
  // c10::optional in libtorch 1.13, std::optional in 2.x.
  auto const limit = options.timeout();
  if (limit.has_value()) timeout(std::chrono::milliseconds{*limit});
  enforce_ordering(options.enforce_ordering());
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
  begin_starts_over_ = value == 0;
  return *this;
}

data_loader_options& data_loader_options::max_jobs(std::size_t value) {
  return prefetch_depth(value);
}

data_loader_options& data_loader_options::drop_last(bool value) {
  options_.last_batch = value ? tail_policy::drop : tail_policy::keep;
  return *this;
}

bool data_loader_options::drop_last() const noexcept {
  return options_.last_batch == tail_policy::drop;
}

data_loader_options& data_loader_options::enforce_ordering(bool value) {
  if (!value) {
    add_note(notes_,
             "enforce_ordering(false) changes nothing: gpufeed delivers batches in sampler order, "
             "and a slow sample holds back only its own batch while the workers go on with the "
             "next ones");
  }
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

data_loader_options& data_loader_options::held_batches_budget(std::size_t bytes) {
  options_.held_batches_budget = bytes;
  return *this;
}

data_loader_options& data_loader_options::accumulation_steps(std::size_t value) {
  options_.accumulation_steps = value;
  return *this;
}

data_loader_options& data_loader_options::seed(std::uint64_t value) {
  seed_ = value;
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

}  // namespace gpufeed::torch
