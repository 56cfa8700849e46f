#include "gpufeed/loader.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
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
  core_->set_epoch(epoch);
}
void loader::set_epoch(std::uint64_t epoch, epoch_order order) {
  core_->set_epoch(epoch, std::move(order));
}
std::uint64_t loader::epoch() const {
  return core_->epoch();
}
std::optional<batch> loader::next() {
  return std::move(core_->next().value);
}
std::optional<batch> loader::next(stream_view consumer) {
  return std::move(core_->next(consumer).value);
}
next_result loader::try_next_for(std::chrono::milliseconds max_wait) {
  return core_->next(std::nullopt, give_up_after(max_wait));
}
next_result loader::try_next_for(std::chrono::milliseconds max_wait, stream_view consumer) {
  return core_->next(consumer, give_up_after(max_wait));
}
std::size_t loader::batches_per_epoch() const noexcept {
  return core_->current_plan_sizes().batches;
}
std::size_t loader::steps_per_epoch() const noexcept {
  return core_->current_plan_sizes().steps;
}
std::size_t loader::samples_per_epoch() const noexcept {
  return core_->current_plan_sizes().samples;
}
std::size_t loader::batch_bytes() const noexcept {
  return core_->layout().spec().bytes_per_sample() * core_->options().batch_size;
}
loader_options const& loader::options() const noexcept {
  return core_->options();
}
loader_state loader::state() const {
  return core_->state();
}
void loader::restore(loader_state const& state) {
  core_->restore(state);
}
stats loader::snapshot() const {
  return core_->snapshot();
}
void loader::write_trace(std::ostream& out) const {
  core_->write_trace(out);
}
void loader::write_trace(std::filesystem::path const& path) const {
  core_->expect_tracing();  // before the file is created or truncated
  std::ofstream file{path, std::ios::binary | std::ios::trunc};
  if (file) {
    core_->write_trace(file);
    file.flush();
  }
  if (!file) {
    throw file_error{path.string(), "cannot write the trace"};
  }
}

// ---- loader_state's text form ----------------------------------------------------------------

std::string loader_state::to_string() const {
  std::ostringstream out;
  out << "gpufeed-state/1 seed=" << seed << " epoch=" << epoch << " next_sequence=" << next_sequence
      << " dataset_size=" << dataset_size << " batch_size=" << batch_size << " rank=" << rank
      << " world_size=" << world_size << " shuffle=" << (shuffle ? 1 : 0)
      << " chunk_window=" << chunk_window;
  return out.str();
}

loader_state loader_state::parse(std::string_view text) {
  auto const bad = [&](std::string const& why) {
    GPUFEED_EXPECTS(false, "cannot parse loader state '" + std::string{text} + "': " + why);
  };
  std::istringstream in{std::string{text}};
  std::string word;
  in >> word;
  if (word != "gpufeed-state/1") {
    bad("it must start with gpufeed-state/1");
  }
  loader_state state;
  // Each key exactly once: a state written by hand or spliced from two checkpoints is refused.
  struct key_slot {
    char const* name;
    std::uint64_t* target;
    std::uint64_t max;
  };
  std::uint64_t rank = 0;
  std::uint64_t world_size = 0;
  std::uint64_t shuffle = 0;
  constexpr auto unsigned_max = std::uint64_t{std::numeric_limits<unsigned>::max()};
  std::array keys{key_slot{"seed", &state.seed, UINT64_MAX},
                  key_slot{"epoch", &state.epoch, UINT64_MAX},
                  key_slot{"next_sequence", &state.next_sequence, UINT64_MAX},
                  key_slot{"dataset_size", &state.dataset_size, UINT64_MAX},
                  key_slot{"batch_size", &state.batch_size, UINT64_MAX},
                  key_slot{"rank", &rank, unsigned_max},
                  key_slot{"world_size", &world_size, unsigned_max},
                  key_slot{"shuffle", &shuffle, 1},
                  key_slot{"chunk_window", &state.chunk_window, UINT64_MAX}};
  std::array<bool, keys.size()> seen{};
  while (in >> word) {
    auto const eq = word.find('=');
    if (eq == std::string::npos) {
      bad("'" + word + "' is not key=value");
    }
    auto const key = word.substr(0, eq);
    auto const value = word.substr(eq + 1);
    auto const k = std::find_if(keys.begin(), keys.end(), [&](auto& e) { return key == e.name; });
    if (k == keys.end()) {
      bad("unknown key '" + key + "'");
    }
    auto const at = static_cast<std::size_t>(k - keys.begin());
    if (seen[at]) {
      bad("key '" + key + "' appears twice");
    }
    seen[at] = true;
    std::uint64_t number = 0;
    auto const [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc{} || end != value.data() + value.size() || number > k->max) {
      bad("'" + value + "' is not a number from 0 to " + std::to_string(k->max));
    }
    *k->target = number;
  }
  seen.back() = true;  // chunk_window is optional: states written before it existed had none
  if (std::find(seen.begin(), seen.end(), false) != seen.end()) {
    bad("every one of seed, epoch, next_sequence, dataset_size, batch_size, rank, world_size, "
        "shuffle must be given");
  }
  state.rank = static_cast<unsigned>(rank);
  state.world_size = static_cast<unsigned>(world_size);
  state.shuffle = shuffle != 0;
  return state;
}

}  // namespace gpufeed
