#include "gpufeed/loader.hpp"

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

#include "core/loader_front.hpp"
#include "core/metrics/loader_metrics.hpp"
#include "core/metrics/trace_recorder.hpp"
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

// The front of a loader that has one: a moved-from loader has none, and says so.
detail::loader_front& in_use(std::unique_ptr<detail::loader_front> const& front) {
  GPUFEED_EXPECTS(front != nullptr,
                  "this loader was moved from (loader l2{std::move(l)} or l2 = std::move(l)) and "
                  "has no workers, ring or dataset left; use the loader it was moved to");
  return *front;
}

// The core when it exists, else what the layout probe knows.
template <class OnCore, class OnProbe>
decltype(auto) either(std::unique_ptr<detail::loader_front> const& front, OnCore&& on_core,
                      OnProbe&& on_probe) {
  return in_use(front).either(std::forward<OnCore>(on_core), std::forward<OnProbe>(on_probe));
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
  front_ = std::make_unique<detail::loader_front>(std::move(data), std::move(resolved));
}

loader::loader(loader&&) noexcept = default;

loader::~loader() = default;  // the front stops the workers; live batches keep the core

loader& loader::operator=(loader&& other) noexcept {
  if (this != &other) {
    front_ = std::move(other.front_);  // ours stops first: its workers must not outlive us
  }
  return *this;
}

void loader::set_epoch(std::uint64_t epoch) {
  either(
      front_, [&](auto& core) { core.set_epoch(epoch); },
      [&](auto& probe) { probe.set_epoch(epoch); });
}
void loader::set_epoch(std::uint64_t epoch, epoch_order order) {
  either(
      front_, [&](auto& core) { core.set_epoch(epoch, std::move(order)); },
      [&](auto& probe) { probe.set_epoch(epoch, std::move(order)); });
}
std::uint64_t loader::epoch() const {
  return either(
      front_, [](auto& core) { return core.epoch(); }, [](auto& probe) { return probe.epoch(); });
}
std::optional<batch> loader::next() {
  bool epoch_over = false;
  auto* core = in_use(front_).core(detail::loader_front::clock::time_point::max(), &epoch_over);
  return core != nullptr ? std::move(core->next().value) : std::nullopt;
}
std::optional<batch> loader::next(stream_view consumer) {
  bool epoch_over = false;
  auto* core = in_use(front_).core(detail::loader_front::clock::time_point::max(), &epoch_over);
  return core != nullptr ? std::move(core->next(consumer).value) : std::nullopt;
}
next_result loader::try_next_for(std::chrono::milliseconds max_wait) {
  auto const give_up_at = give_up_after(max_wait);
  bool epoch_over = false;
  auto* core = in_use(front_).core(give_up_at, &epoch_over);
  if (core == nullptr) {
    return {epoch_over ? next_result::status::end_of_epoch : next_result::status::pending, {}};
  }
  return core->next(std::nullopt, give_up_at);
}
next_result loader::try_next_for(std::chrono::milliseconds max_wait, stream_view consumer) {
  auto const give_up_at = give_up_after(max_wait);
  bool epoch_over = false;
  auto* core = in_use(front_).core(give_up_at, &epoch_over);
  if (core == nullptr) {
    return {epoch_over ? next_result::status::end_of_epoch : next_result::status::pending, {}};
  }
  return core->next(consumer, give_up_at);
}
std::size_t loader::batches_per_epoch() const {
  return either(
      front_, [](auto& core) { return core.current_plan_sizes().batches; },
      [](auto& probe) { return probe.current_plan_sizes().batches; });
}
std::size_t loader::steps_per_epoch() const {
  return either(
      front_, [](auto& core) { return core.current_plan_sizes().steps; },
      [](auto& probe) { return probe.current_plan_sizes().steps; });
}
std::size_t loader::samples_per_epoch() const {
  return either(
      front_, [](auto& core) { return core.current_plan_sizes().samples; },
      [](auto& probe) { return probe.current_plan_sizes().samples; });
}
epoch_order loader::builtin_order(std::uint64_t epoch) const {
  return either(
      front_, [&](auto& core) { return core.builtin_order(epoch); },
      [&](auto& probe) { return probe.builtin_order(epoch); });
}
std::size_t loader::batch_bytes() const {
  auto& core = in_use(front_).core();  // waits for the layout when it is being learned
  return core.layout().spec().bytes_per_sample() * core.options().batch_size;
}
std::string loader::plan() const {
  return either(
      front_, [](auto& core) { return core.plan(); }, [](auto&) { return std::string{}; });
}
loader_options const& loader::options() const {
  return in_use(front_).options();
}
loader_state loader::state() const {
  return either(
      front_, [](auto& core) { return core.state(); }, [](auto& probe) { return probe.state(); });
}
void loader::restore(loader_state const& state) {
  either(
      front_, [&](auto& core) { core.restore(state); }, [&](auto& probe) { probe.restore(state); });
}
stats loader::snapshot() const {
  return in_use(front_).snapshot();
}
void loader::write_trace(std::ostream& out) const {
  // Before the first batch's layout is learned there is no core and no span yet: a trace with
  // none, rather than a wait for a first sample that may need the caller's thread (a Python
  // dataset's read needs the GIL the caller holds) or an order not given yet.
  either(
      front_, [&](auto& core) { core.write_trace(out); },
      [&](auto&) {
        detail::expect_tracing(options().trace_events);
        detail::trace_recorder::write_empty(out, options().trace_events);
      });
}
void loader::write_trace(std::filesystem::path const& path) const {
  detail::expect_tracing(options().trace_events);  // before the file is created or truncated
  std::ofstream file{path, std::ios::binary | std::ios::trunc};
  if (file) {
    write_trace(file);
    file.flush();
  }
  if (!file) {
    throw file_error{path.string(), "cannot write the trace"};
  }
}

}  // namespace gpufeed
