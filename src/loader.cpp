#include "gpufeed/loader.hpp"

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

#include "gpufeed/detail/loader_core.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed {

namespace {
// The moment `max_wait` from now, saturated: a very long wait means no limit.
detail::loader_core::clock::time_point give_up_after(std::chrono::milliseconds max_wait) {
  using clock = detail::loader_core::clock;
  auto const now = clock::now();
  if (max_wait.count() <= 0) {
    return now;
  }
  auto const room =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock::time_point::max() - now);
  return max_wait >= room ? clock::time_point::max() : now + max_wait;
}

// The core of a loader that has one: a moved-from loader has none, and says so.
detail::loader_core& in_use(std::shared_ptr<detail::loader_core> const& core) {
  GPUFEED_EXPECTS(core != nullptr,
                  "this loader was moved from (loader l2{std::move(l)} or l2 = std::move(l)) and "
                  "has no workers, ring or dataset left; use the loader it was moved to");
  return *core;
}

loader_options checked(dataset const* data, loader_options options) {
  GPUFEED_EXPECTS(data != nullptr, "loader: the dataset pointer is null; pass a dataset");
  options = resolve_distributed(options);
  validate(options);
  return options;
}
}  // namespace

loader::loader(std::shared_ptr<dataset const> data, loader_options options) {
  auto resolved = checked(data.get(), options);
  core_ = std::make_shared<detail::loader_core>(std::move(data), resolved);
  core_->start();
}

loader::~loader() {
  if (core_) {
    core_->stop();
  }
}

loader& loader::operator=(loader&& other) noexcept {
  if (this != &other) {
    if (core_) {
      core_->stop();  // live batches may keep the core alive; its workers must not outlive us
    }
    core_ = std::move(other.core_);
  }
  return *this;
}

void loader::set_epoch(std::uint64_t epoch) {
  in_use(core_).set_epoch(epoch);
}
void loader::set_epoch(std::uint64_t epoch, epoch_order order) {
  in_use(core_).set_epoch(epoch, std::move(order));
}
std::uint64_t loader::epoch() const {
  return in_use(core_).epoch();
}
std::optional<batch> loader::next() {
  return std::move(in_use(core_).next().value);
}
std::optional<batch> loader::next(stream_view consumer) {
  return std::move(in_use(core_).next(consumer).value);
}
next_result loader::try_next_for(std::chrono::milliseconds max_wait) {
  return in_use(core_).next(std::nullopt, give_up_after(max_wait));
}
next_result loader::try_next_for(std::chrono::milliseconds max_wait, stream_view consumer) {
  return in_use(core_).next(consumer, give_up_after(max_wait));
}
std::size_t loader::batches_per_epoch() const {
  return in_use(core_).current_plan_sizes().batches;
}
std::size_t loader::steps_per_epoch() const {
  return in_use(core_).current_plan_sizes().steps;
}
std::size_t loader::samples_per_epoch() const {
  return in_use(core_).current_plan_sizes().samples;
}
std::size_t loader::batch_bytes() const {
  return in_use(core_).layout().spec().bytes_per_sample() * in_use(core_).options().batch_size;
}
loader_options const& loader::options() const {
  return in_use(core_).options();
}
loader_state loader::state() const {
  return in_use(core_).state();
}
void loader::restore(loader_state const& state) {
  in_use(core_).restore(state);
}
stats loader::snapshot() const {
  return in_use(core_).snapshot();
}
void loader::write_trace(std::ostream& out) const {
  in_use(core_).write_trace(out);
}
void loader::write_trace(std::filesystem::path const& path) const {
  in_use(core_).expect_tracing();  // before the file is created or truncated
  std::ofstream file{path, std::ios::binary | std::ios::trunc};
  if (file) {
    in_use(core_).write_trace(file);
    file.flush();
  }
  if (!file) {
    throw file_error{path.string(), "cannot write the trace"};
  }
}

}  // namespace gpufeed
