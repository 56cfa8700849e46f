#pragma once
/// @file
/// @brief The interface users implement to plug their data into a loader.
///
/// @code
/// class squares final : public gpufeed::dataset {
///  public:
///   std::size_t size() const override { return 1000; }
///   gpufeed::sample_spec spec() const override {
///     using gpufeed::dtype;
///     return gpufeed::sample_spec{}.add("x", dtype::f32, {}).add("y", dtype::f32, {});
///   }
///   void read(std::size_t i, gpufeed::sample_view out,
///             gpufeed::read_context const&) const override {
///     out.as<float>(0)[0] = float(i);
///     out.as<float>(1)[0] = float(i * i);
///   }
/// };
/// @endcode

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"

namespace gpufeed {

/// @brief What a read knows about itself.
struct read_context {
  /// The sample's index in the dataset.
  std::size_t index = 0;
  /// The epoch being read.
  std::uint64_t epoch = 0;
  /// The worker thread reading it (0 .. workers-1). Never use it to derive randomness.
  unsigned worker = 0;
  /// Seed for any random choice in this read (augmentation): a function of the loader's seed,
  /// the epoch and the index only, so the same sample gets the same pixels on any worker.
  std::uint64_t seed = 0;
  /// Set when the loader is being destroyed; long reads may poll it and return early.
  std::atomic<bool> const* stop = nullptr;

  /// @brief Whether the loader asks this read to stop early (its result will be discarded).
  [[nodiscard]] bool stop_requested() const noexcept {
    return stop != nullptr && stop->load(std::memory_order_relaxed);
  }
};

/// @brief A random-access collection of samples of one `sample_spec`.
///
/// `read` is called concurrently from many worker threads and must be thread-safe. It writes the
/// sample straight into `out` (the batch's memory): no allocation is needed. To report a bad
/// sample, throw: `file_error` names the file; any exception reaches the consumer wrapped in a
/// `sample_error` with the index, or is counted and skipped under `error_policy::skip`.
class dataset {
 public:
  virtual ~dataset() = default;
  /// @brief Number of samples.
  [[nodiscard]] virtual std::size_t size() const = 0;
  /// @brief The layout of every sample. Called once, at loader construction.
  [[nodiscard]] virtual sample_spec spec() const = 0;
  /// @brief Writes sample `index` into `out`. Thread-safe; may throw.
  virtual void read(std::size_t index, sample_view out, read_context const& ctx) const = 0;
  /// @brief Samples per storage chunk (consecutive indices stored and decompressed together, as
  /// in a chunked HDF5 file), or 0 when reads have no such structure. The loader's chunk-aware
  /// shuffle (`loader_options::chunk_window`) draws from a few chunks at a time when it is > 1.
  [[nodiscard]] virtual std::size_t storage_chunk() const { return 0; }
};

}  // namespace gpufeed
