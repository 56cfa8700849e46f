#include "gpufeed/options.hpp"

#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gpufeed/error.hpp"

namespace gpufeed {

namespace {
std::optional<unsigned> from_environment(char const* name) {
  char const* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return std::nullopt;
  }
  std::string_view const view{text};
  unsigned value = 0;
  auto const [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  GPUFEED_EXPECTS(error == std::errc{} && end == view.data() + view.size(),
                  std::string{"environment variable "} + name + "='" + text +
                      "' is not a non-negative integer; fix it or set the option explicitly");
  return value;
}

template <class T>
void expect_range(char const* option, T value, T low, T high, char const* hint = "") {
  GPUFEED_EXPECTS(value >= low && value <= high,
                  std::string{"loader_options::"} + option + " = " + std::to_string(value) +
                      " is out of range; allowed: " + std::to_string(low) + " to " +
                      std::to_string(high) + hint);
}
}  // namespace

namespace {
// This process's rank among `world` as a launcher's environment says it: RANK (torchrun, and
// most launchers), else the rank within the node (LOCAL_RANK) on node GROUP_RANK (torchrun's
// name) or NODE_RANK (Lightning's), each node holding LOCAL_WORLD_SIZE ranks. Unknown: nullopt.
std::optional<unsigned> rank_from_environment() {
  if (auto const rank = from_environment("RANK")) {
    return rank;
  }
  auto const local = from_environment("LOCAL_RANK");
  if (!local) {
    return std::nullopt;
  }
  auto node = from_environment("GROUP_RANK");
  if (!node) {
    node = from_environment("NODE_RANK");
  }
  if (node.value_or(0) == 0) {
    return local;  // the first node's ranks come first, whatever its size
  }
  auto const per_node = from_environment("LOCAL_WORLD_SIZE");
  if (!per_node) {
    return std::nullopt;
  }
  return *node * *per_node + *local;
}
}  // namespace

loader_options resolve_distributed(loader_options options) {
  if (!options.world_size) {
    options.world_size = from_environment("WORLD_SIZE").value_or(1);
  }
  if (!options.rank) {
    // A world of one given explicitly reads everything, whatever the environment says.
    auto const rank =
        *options.world_size == 1 ? std::optional<unsigned>{0} : rank_from_environment();
    // The caller's own order is this rank's already: its rank only names it in messages.
    GPUFEED_EXPECTS(rank || *options.world_size == 1 || options.order == sample_order::given,
                    "loader_options::world_size = " + std::to_string(*options.world_size) +
                        " processes, but nothing says which one this is: neither "
                        "loader_options::rank nor the environment variables RANK or LOCAL_RANK "
                        "(with GROUP_RANK or NODE_RANK and LOCAL_WORLD_SIZE on a second node) are "
                        "set, and every process would read rank 0's share. Pass "
                        "loader_options::rank (and world_size), start the processes with "
                        "torchrun, which sets RANK, or pass loader_options::world_size = 1 to "
                        "read the whole dataset in each process");
    options.rank = rank.value_or(0);
  }
  if (options.target == placement::cuda && !options.device) {
    options.device = static_cast<int>(from_environment("LOCAL_RANK").value_or(0));
  }
  return options;
}

void validate(loader_options const& o) {
  constexpr std::size_t max_batch = std::size_t{1} << 32;
  expect_range<std::size_t>("batch_size", o.batch_size, 1, max_batch);
  if (o.workers != auto_workers) {
    expect_range<unsigned>("workers", o.workers, 1, 1024,
                           " (worker threads; use at least 1, typically the core count, or "
                           "gpufeed::auto_workers to let the loader choose)");
  }
  if (o.prefetch_depth != auto_depth) {
    expect_range<std::size_t>("prefetch_depth", o.prefetch_depth, 1, 4096,
                              " (slots in the ring; 2 or more lets reading overlap training; or "
                              "gpufeed::auto_depth to let the loader choose)");
  }
  expect_range<unsigned>("autotune.max_workers", o.autotune.max_workers, 0, 1024,
                         " (0: the cores this process may run on, at most 64)");
  expect_range<std::size_t>("autotune.max_depth", o.autotune.max_depth, 1, 4096,
                            " (most ring slots an automatic prefetch_depth may use)");
  expect_range<std::size_t>("autotune.window_batches", o.autotune.window_batches, 2, 4096,
                            " (batches between two autotuner decisions)");
  if (o.autotune.memory_budget) {
    GPUFEED_EXPECTS(*o.autotune.memory_budget > 0,
                    "loader_options::autotune.memory_budget = 0 leaves no room for the ring; "
                    "leave it unset for the default (1/8 of physical memory, at most 4 GiB)");
  }
  expect_range<std::size_t>("accumulation_steps", o.accumulation_steps, 1, max_batch,
                            " (1 means no gradient accumulation)");
  expect_range<std::size_t>("chunk_window", o.chunk_window, 0, std::size_t{1} << 20,
                            " (chunks drawn from together by the chunk-aware shuffle; 0 = off)");
  expect_range<std::size_t>("trace_events", o.trace_events, 0, std::size_t{1} << 24,
                            " (stage spans kept for write_trace, 48 bytes each; 0 = off)");
  GPUFEED_EXPECTS(o.timeout.count() >= 0,
                  "loader_options::timeout = " + std::to_string(o.timeout.count()) +
                      " ms is negative; use 0 to wait forever");
  GPUFEED_EXPECTS(o.stall_warning.count() > 0,
                  "loader_options::stall_warning = " + std::to_string(o.stall_warning.count()) +
                      " ms must be positive");
  if (o.device) {
    expect_range<int>("device", *o.device, 0, 1023, " (a CUDA device ordinal)");
  }
  if (o.pinned_budget) {
    GPUFEED_EXPECTS(*o.pinned_budget > 0,
                    "loader_options::pinned_budget = 0 leaves no room for the ring; leave it unset "
                    "for the default, or use staging = staging_memory::pageable to pin nothing");
  }
  GPUFEED_EXPECTS(o.transforms.empty() || o.target == placement::cuda,
                  "loader_options::transforms run on the GPU after the copy; set target = "
                  "placement::cuda, or convert in dataset::read on the host path");
  if (o.world_size) {
    expect_range<unsigned>("world_size", *o.world_size, 1, 1u << 20);
    if (o.rank) {
      GPUFEED_EXPECTS(*o.rank < *o.world_size,
                      "loader_options::rank = " + std::to_string(*o.rank) +
                          " is out of range; allowed: 0 to world_size - 1 = " +
                          std::to_string(*o.world_size - 1));
    }
  }
}

}  // namespace gpufeed
