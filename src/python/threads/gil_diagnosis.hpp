#pragma once
// What the core's diagnosis cannot see for a Python dataset read by worker threads: Python's
// GIL. Threads running __getitem__ hold it, and the training loop's own Python waits for it
// meanwhile, so the loop slows while its measured data wait stays low (the core would call
// such a run gpu_bound). Worker processes have their own GIL each and never need this.

#include <optional>
#include <string>

#include "gpufeed/diagnosis.hpp"
#include "gpufeed/stats.hpp"
#include "python/threads/python_dataset.hpp"

namespace gpufeed::python {

/// The workers' hold on the GIL, as a share of the run, from which it is the bottleneck: the
/// training loop's Python gets at most the rest.
inline constexpr double gil_held_share = 0.25;
/// A share of the workers' read time spent waiting for the GIL from which more workers do not
/// help.
inline constexpr double gil_wait_share = 0.25;

/// ("gil_bound", the evidence and the fix) when worker threads' use of the GIL is what limits
/// the run; nothing when it is not (or `core` has too little to judge). `times` are the
/// workers', over the loader's life as `s`.
[[nodiscard]] std::optional<diagnosis> gil_diagnosis(stats const& s, gil_times const& times,
                                                     diagnosis const& core);

}  // namespace gpufeed::python
