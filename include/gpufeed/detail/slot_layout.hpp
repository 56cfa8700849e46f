#pragma once
// Where each field of each sample lives inside one slot (one batch's memory).
//
// A slot holds one contiguous region per field, [batch_size x field bytes], each aligned to
// `alignment`, so that every field of a batch is already a dense batched tensor: no collate copy.

#include <cstddef>
#include <vector>

#include "gpufeed/sample_spec.hpp"

namespace gpufeed::detail {

class slot_layout {
 public:
  /// Region alignment: enough for any dtype, vector loads and cudaMemcpy's fast paths.
  static constexpr std::size_t alignment = 256;
  /// `bytes` rounded up to a multiple of `alignment`; `bytes` must be at most SIZE_MAX - 255
  /// (checked_round_up checks it).
  [[nodiscard]] static constexpr std::size_t round_up(std::size_t bytes) noexcept {
    return (bytes + alignment - 1) / alignment * alignment;
  }

  /// @throws logic_error naming batch_size and the field when a region or the slot's size does
  /// not fit in std::size_t.
  slot_layout(sample_spec spec, std::size_t batch_size);

  [[nodiscard]] sample_spec const& spec() const noexcept { return spec_; }
  [[nodiscard]] std::size_t batch_size() const noexcept { return batch_size_; }
  /// Bytes of the whole slot, padding included.
  [[nodiscard]] std::size_t slot_bytes() const noexcept { return slot_bytes_; }
  /// Offset of field `f`'s region from the start of the slot.
  [[nodiscard]] std::size_t field_offset(std::size_t f) const noexcept { return offsets_[f]; }
  /// Bytes of one sample of field `f`.
  [[nodiscard]] std::size_t field_bytes(std::size_t f) const noexcept { return field_bytes_[f]; }
  /// Bytes from the slot's start to the end of the last field's first `samples` samples: what
  /// one copy of a batch of `samples` samples must move.
  [[nodiscard]] std::size_t used_bytes(std::size_t samples) const noexcept {
    return offsets_.back() + samples * field_bytes_.back();
  }
  /// Where sample `position` of field `f` starts inside a slot based at `slot`.
  [[nodiscard]] std::byte* locate(std::byte* slot, std::size_t f,
                                  std::size_t position) const noexcept {
    return slot + offsets_[f] + position * field_bytes_[f];
  }

 private:
  sample_spec spec_;
  std::size_t batch_size_;
  std::vector<std::size_t> offsets_;
  std::vector<std::size_t> field_bytes_;
  std::size_t slot_bytes_ = 0;
};

}  // namespace gpufeed::detail
