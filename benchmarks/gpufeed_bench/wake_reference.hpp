#pragma once
// What this machine charges a thread to wake others: the reference next to `overhead`'s
// handoff_us.
//
// `threads` threads park on a condition variable (as a loader's workers do when its ring is
// full); the caller waits, untimed, until all are parked, then times lock + notify_one(): the
// least a consumer pays to have one parked worker take a slot that came free.

#include <cstddef>
#include <vector>

namespace gpufeed::bench {

/// Microseconds of each of `wakes` timed lock + notify_one() calls, `threads` threads parked.
[[nodiscard]] std::vector<double> measure_condvar_wake_us(unsigned threads, std::size_t wakes);

}  // namespace gpufeed::bench
