#pragma once
/// @file
/// @brief A non-owning, copyable handle on a CUDA stream that is never the legacy default stream.
///
/// Usable without CUDA's headers: `cudaStream_t` is `CUstream_st*`, declared here the same way.
///
/// @code
/// cudaStream_t s;  // the training step's stream, e.g. torch's current stream
/// auto b = loader.next(gpufeed::stream_view{s});
/// @endcode

#include <cstdint>

struct CUstream_st;  // CUDA's opaque stream type (cudaStream_t is CUstream_st*)

namespace gpufeed {

/// @brief A CUDA stream chosen explicitly by the caller.
///
/// The constructor refuses the null stream (`0`, `nullptr`) and `cudaStreamLegacy`, which
/// synchronize with every blocking stream of the device: a handle that happens to be 0 is more
/// often a forgotten stream than a choice. `legacy_default()` names that stream on purpose;
/// `cudaStreamPerThread` is accepted: naming it is an explicit choice.
class stream_view {
 public:
  using native_type = CUstream_st*;

  /// @throws logic_error for the null or the legacy default stream.
  explicit stream_view(native_type stream);
  stream_view(std::nullptr_t) = delete;
  stream_view(int) = delete;

  /// @brief The legacy default stream, named explicitly: for a training step that runs there
  /// (libtorch's default stream is this one). The loader's copy stream is created non-blocking,
  /// so its copies still overlap with work on this stream; only work queued here after `next()`
  /// waits for the batch. The constructor refuses the same stream passed as a plain handle, so
  /// it is never chosen by accident.
  [[nodiscard]] static stream_view legacy_default() noexcept;

  /// @brief The `cudaStream_t`.
  [[nodiscard]] native_type native() const noexcept { return stream_; }
  friend bool operator==(stream_view, stream_view) = default;

 private:
  struct unchecked {};
  stream_view(native_type stream, unchecked) noexcept : stream_{stream} {}
  native_type stream_;
};

}  // namespace gpufeed
