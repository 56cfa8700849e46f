#pragma once
/// @file
/// @brief Where each field of a run of samples lives in one block of memory, laid out as the
/// loader's batch slots are: for programs that call `dataset::read` themselves (reference loops,
/// adapters to other loaders, tests).
///
/// @code
/// gpufeed::sample_layout const layout{data->spec(), 64};
/// std::vector<std::byte> block(layout.bytes());  // operator new aligns it for every dtype
/// for (std::size_t i = 0; i < 64; ++i) data->read(i, layout.view(block.data(), i), {.index = i});
/// // field f of the 64 samples: layout.field_offset(f), 64 x layout.field_bytes(f) bytes
/// @endcode

#include <cstddef>

#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"

namespace gpufeed {

/// @brief One region per field, each `samples` x the field's bytes, each starting at a multiple
/// of `alignment` from the block's start. Immutable; cheap to share between threads.
class sample_layout {
 public:
  /// @brief The alignment of each field's region (relative to the block's start).
  static constexpr std::size_t alignment = detail::slot_layout::alignment;

  /// @throws logic_error on a spec without fields, or when a region or the block's size does not
  /// fit in std::size_t (the message names the field).
  sample_layout(sample_spec spec, std::size_t samples) : layout_{std::move(spec), samples} {}

  [[nodiscard]] sample_spec const& spec() const noexcept { return layout_.spec(); }
  /// @brief Samples the block holds.
  [[nodiscard]] std::size_t samples() const noexcept { return layout_.batch_size(); }
  /// @brief Bytes of the whole block, padding included.
  [[nodiscard]] std::size_t bytes() const noexcept { return layout_.slot_bytes(); }
  /// @brief Offset of field `f`'s region from the block's start.
  [[nodiscard]] std::size_t field_offset(std::size_t f) const noexcept {
    return layout_.field_offset(f);
  }
  /// @brief Bytes of one sample of field `f`.
  [[nodiscard]] std::size_t field_bytes(std::size_t f) const noexcept {
    return layout_.field_bytes(f);
  }
  /// @brief Bytes from the block's start to the end of the last field's first `samples`
  /// samples: what a copy of that many samples must move.
  [[nodiscard]] std::size_t used_bytes(std::size_t samples) const noexcept {
    return layout_.used_bytes(samples);
  }
  /// @brief Where `dataset::read` writes sample `position` (< samples()) of a block at `block`
  /// (at least bytes() long, aligned to `alignment` for vectorized reads). Valid while this
  /// layout and the block live.
  [[nodiscard]] sample_view view(std::byte* block, std::size_t position) const noexcept {
    return sample_view{layout_, block, position};
  }

 private:
  detail::slot_layout layout_;
};

}  // namespace gpufeed
