#pragma once
/// @file
/// @brief Where a dataset writes one sample: typed spans straight into the batch's slot.

#include <cstddef>
#include <span>
#include <string>

#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sample_spec.hpp"

namespace gpufeed {

/// @brief The destination of one sample inside a batch slot. Cheap to copy; allocates nothing.
///
/// Valid only during the `dataset::read` call it was given to. Every byte of every field should
/// be written: the slot is reused and still holds an older batch's bytes.
class sample_view {
 public:
  /// @brief Used by the loader (and by tests that call `read` directly).
  sample_view(detail::slot_layout const& layout, std::byte* slot, std::size_t position) noexcept
      : layout_{&layout}, slot_{slot}, position_{position} {}

  /// @brief The layout of the sample.
  [[nodiscard]] sample_spec const& spec() const noexcept { return layout_->spec(); }
  /// @brief Number of fields.
  [[nodiscard]] std::size_t fields() const noexcept { return layout_->spec().size(); }
  /// @brief This sample's position in its batch (0-based).
  [[nodiscard]] std::size_t position() const noexcept { return position_; }

  /// @brief The raw bytes of field `f` for this sample.
  [[nodiscard]] std::span<std::byte> bytes(std::size_t f) const noexcept {
    return {layout_->locate(slot_, f, position_), layout_->field_bytes(f)};
  }

  /// @brief Field `f` as elements of `T`.
  /// @throws logic_error if `T` does not match the field's dtype (see `dtype_matches`).
  template <class T>
  [[nodiscard]] std::span<T> as(std::size_t f) const {
    auto const& fld = layout_->spec()[f];
    GPUFEED_EXPECTS(dtype_matches<T>(fld.type), "field '" + fld.name + "' is " +
                                                    std::string{to_string(fld.type)} +
                                                    "; access it with the matching C++ type");
    auto raw = bytes(f);
    return {reinterpret_cast<T*>(raw.data()), raw.size() / sizeof(T)};
  }

 private:
  detail::slot_layout const* layout_;
  std::byte* slot_;
  std::size_t position_;
};

}  // namespace gpufeed
