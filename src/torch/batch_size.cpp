#include "gpufeed/torch/batch_size.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <sstream>
#include <string>

#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"

#if GPUFEED_TORCH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace gpufeed::torch {
namespace {

void free_cached_memory() noexcept {
#if GPUFEED_TORCH_WITH_CUDA
  // What a failed trial allocated stays in torch's cache; the next trial should start clean.
  try {
    c10::cuda::CUDACachingAllocator::emptyCache();
  } catch (...) {
  }
#endif
}

// Runs one trial: true if it fit, false if it ran out of memory; other errors propagate.
bool fits(std::function<void(std::size_t)> const& trial, std::size_t batch,
          batch_size_result& result) {
  bool fit = true;
  try {
    trial(batch);
  } catch (...) {
    auto const error = std::current_exception();
    if (!is_out_of_memory(error)) throw;
    fit = false;
  }
  if (!fit) free_cached_memory();
  result.trials.push_back({batch, fit});
  return fit;
}

std::string describe(batch_size_result const& r, batch_size_search const& search) {
  std::ostringstream out;
  if (r.largest_fit == 0) {
    out << "batch-size search: even batch size " << search.start
        << " ran out of memory; make the model or the samples smaller";
    return out.str();
  }
  out << "batch-size search: " << r.largest_fit << " is the largest batch size that fit"
      << (r.hit_max ? " (the search stopped at its maximum, not at a memory limit)" : "")
      << "; suggested: " << r.suggested << " (" << static_cast<int>(search.headroom * 100)
      << "% headroom). Only a suggestion: your batch size is unchanged; if you change it, "
         "scale the learning rate (gpufeed::torch::scale_learning_rate)";
  return out.str();
}

}  // namespace

bool is_out_of_memory(std::exception_ptr const& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (c10::OutOfMemoryError const&) {
    return true;
  } catch (std::bad_alloc const&) {
    return true;
  } catch (c10::Error const& e) {
    return std::string{e.what()}.find("out of memory") != std::string::npos;
  } catch (...) {
    return false;
  }
}

batch_size_result find_batch_size(std::function<void(std::size_t)> const& trial,
                                  batch_size_search const& search) {
  GPUFEED_EXPECTS(search.start >= 1 && search.start <= search.max,
                  "find_batch_size: start must be between 1 and max (start " +
                      std::to_string(search.start) + ", max " + std::to_string(search.max) + ")");
  GPUFEED_EXPECTS(
      search.headroom >= 0 && search.headroom < 1,
      "find_batch_size: headroom is a share in [0, 1), got " + std::to_string(search.headroom));
  batch_size_result result;
  // Grow by doubling until a trial fails or the maximum fits.
  std::size_t low = 0;   // largest known fit
  std::size_t high = 0;  // smallest known failure (0: none yet)
  for (std::size_t b = search.start;; b = std::min(b * 2, search.max)) {
    if (!fits(trial, b, result)) {
      high = b;
      break;
    }
    low = b;
    if (b == search.max) {
      result.hit_max = true;
      break;
    }
  }
  // Bisect between the last fit and the first failure.
  while (high != 0 && low != 0 && high - low > 1) {
    auto const mid = low + (high - low) / 2;
    (fits(trial, mid, result) ? low : high) = mid;
  }
  result.largest_fit = low;
  auto const multiple = std::max<std::size_t>(search.multiple, 1);
  auto const room =
      static_cast<std::size_t>(std::floor(static_cast<double>(low) * (1.0 - search.headroom)));
  result.suggested =
      room >= multiple ? room / multiple * multiple : std::max<std::size_t>(room, low > 0 ? 1 : 0);
  result.message = describe(result, search);
  log_message(log_level::info, result.message);
  return result;
}

double scale_learning_rate(double base_lr, std::size_t base_batch, std::size_t new_batch,
                           lr_rule rule) {
  GPUFEED_EXPECTS(base_batch > 0 && new_batch > 0,
                  "scale_learning_rate: batch sizes must be positive (base " +
                      std::to_string(base_batch) + ", new " + std::to_string(new_batch) + ")");
  GPUFEED_EXPECTS(
      std::isfinite(base_lr) && base_lr > 0,
      "scale_learning_rate: base_lr must be positive and finite, got " + std::to_string(base_lr));
  double const ratio = static_cast<double>(new_batch) / static_cast<double>(base_batch);
  return base_lr * (rule == lr_rule::linear ? ratio : std::sqrt(ratio));
}

std::size_t effective_batch_size(std::size_t batch_size, std::size_t accumulation_steps,
                                 std::size_t world_size) {
  return batch_size * accumulation_steps * world_size;
}

}  // namespace gpufeed::torch
