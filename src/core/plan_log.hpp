#pragma once
// What the loader says when it is made: the plan of an epoch (or that the caller gives each
// epoch's order), the effective batch, the workers and the ring's memory, the autotuner's start,
// the chunk-aware shuffle, and a warning for an epoch without batches.

#include <string>

#include "core/epochs/epoch_source.hpp"
#include "core/ring/ring_memory.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/options.hpp"

namespace gpufeed::detail {

/// The loader's plan as text, one line each: what it logs at info.
[[nodiscard]] std::string loader_plan(dataset const& data, slot_layout const& layout,
                                      loader_options const& options, epoch_source const& epochs,
                                      ring_plan const& sizes);
/// Logs the loader's plan (info; a warning for an epoch without batches) and returns it as
/// loader_plan does. No lock is held.
std::string log_loader_plan(dataset const& data, slot_layout const& layout,
                            loader_options const& options, epoch_source const& epochs,
                            ring_plan const& sizes);

}  // namespace gpufeed::detail
