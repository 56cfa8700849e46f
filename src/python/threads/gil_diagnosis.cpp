#include "python/threads/gil_diagnosis.hpp"

#include <algorithm>
#include <cstdio>

namespace gpufeed::python {

namespace {
std::string text(char const* format, double a, double b, double c, unsigned long long d) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, format, a, b, c, d);
  return buffer;
}
}  // namespace

std::optional<diagnosis> gil_diagnosis(stats const& s, gil_times const& t, diagnosis const& core) {
  if (core.kind == bottleneck::not_enough_data || s.wall_s <= 0 || t.reads == 0) {
    return std::nullopt;
  }
  auto const fix =
      std::string{
          " Read it with worker processes (worker_type='process', the default for a Python "
          "dataset), which have a GIL each, or move the work to code that releases the GIL (numpy, "
          "PIL or OpenCV decoding, file reads), or to a gpufeed.datasets dataset. (Before the "
          "GIL: "} +
      core.sentence + ")";
  // The loop's side: the workers held the GIL for much of the run, so whatever Python the
  // training loop runs waited for it, however little it waited for data.
  auto const held = t.python_s / s.wall_s;
  if (held >= gil_held_share) {
    return diagnosis{
        bottleneck::gil_bound,
        text("The worker threads held Python's GIL for %.0f %% of the run (%.2f s of %.2f s over "
             "%llu reads): the training loop's own Python waits for it meanwhile, so the loop "
             "runs slower than its data wait shows.",
             100.0 * held, t.python_s, s.wall_s, static_cast<unsigned long long>(t.reads)) +
            fix};
  }
  // The workers' side: their reads wait for the GIL, so more workers do not read faster. The
  // wait is the read time spent neither running Python nor copying: taking the GIL, and what
  // worker_gil does not time (releasing it while another thread asks for it: CPython's
  // forced switch).
  if (core.kind == bottleneck::gpu_bound) {
    return std::nullopt;
  }
  auto const read_s = std::max(s.read_s, t.wait_s + t.python_s + t.copy_s);
  auto const waited_s = std::max(t.wait_s, read_s - t.python_s - t.copy_s);
  if (read_s > 0 && waited_s >= gil_wait_share * read_s) {
    return diagnosis{
        bottleneck::gil_bound,
        text("The workers waited for Python's GIL %.0f %% of their read time (%.2f s of %.2f s "
             "over %llu reads): the dataset's __getitem__ runs Python code that holds the GIL, "
             "so more worker threads do not help.",
             100.0 * waited_s / read_s, waited_s, read_s,
             static_cast<unsigned long long>(t.reads)) +
            fix};
  }
  return std::nullopt;
}

}  // namespace gpufeed::python
